"""Library knowledge, read once from library.toml: the sets the inference asks about."""

from __future__ import annotations

import os
import re
import sys
from fnmatch import translate
from typing import FrozenSet, Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# (a plain open, not importlib.resources: that import alone was 6 ms of every cold check)
with open(os.path.join(os.path.dirname(__file__), "library.toml"), "rb") as _fh:
    _DATA = tomllib.load(_fh)


def _set(section: str, key: str) -> FrozenSet[str]:
    return frozenset(_DATA[section][key])


# torch.* functions (names without the `torch.` prefix)
DETERMINISTIC_FACTORIES = _set("torch", "deterministic_factories")
RANDOM_FACTORIES = _set("torch", "random_factories")
DATA_FACTORIES = _set("torch", "data_factories")
FACTORIES = DETERMINISTIC_FACTORIES | RANDOM_FACTORIES | DATA_FACTORIES
COPYING_DATA_FACTORIES = _set("torch", "copying_data_factories")
# factories that take sizes (not data): the device can move into the call
SIZE_FACTORIES = (DETERMINISTIC_FACTORIES | RANDOM_FACTORIES) - _set("torch", "tensor_sampling_factories")
TORCH_NON_TENSOR = _set("torch", "non_tensor")
TORCH_RETURNS_ARGUMENT = _set("torch", "returns_argument")
REGISTERED_TENSORS = _set("torch", "registered_tensors")
DEVICE_SETTING_METHODS = _set("torch", "device_setting_methods")
TORCH_WRAPS_MODULE = _set("torch", "wraps_module")
TORCH_NON_TENSOR_PREFIXES = tuple(_DATA["torch"]["non_tensor_prefixes"])
# accessors (`is_*`, `get_*`...) return host values in every torch namespace, as at the top
TORCH_ACCESSOR_PREFIXES = tuple(p for p in TORCH_NON_TENSOR_PREFIXES if p.endswith("_"))
TORCH_CPU_RESULTS = _set("torch", "cpu_results")
MULTI_OUTPUT = _set("torch", "multi_output")
ELEMENTWISE_WITH_TENSOR = _set("torch", "elementwise_with_tensor")
VALUES_INDICES = _set("torch", "values_indices")
INT_RESULTS = _set("torch", "int_results")
CUDA_DEVICES = _set("torch", "cuda_devices")
EXPORT_ONLY = _set("torch", "export_only")
OTHER_ACCELERATOR_AVAILABLE = _set("torch", "other_accelerator_available")
NON_CUDA_DEVICES = tuple(sorted(_set("torch", "non_cuda_devices")))
EVENTS = _set("torch", "events")
STREAMS = _set("torch", "streams")
LEGACY_CTORS = _set("torch", "legacy_ctors")
GRAD_SCALERS = _set("torch", "grad_scalers")
SCALER_READ_METHODS = _set("torch", "scaler_read_methods")
GRAD_SCALER = "torch.amp.GradScaler"  # the class of their instances' values
TENSOR_DATASETS = _set("torch", "tensor_datasets")
AVERAGED_MODELS = _set("torch", "averaged_models")
AVERAGED_MODEL = "torch.optim.swa_utils.AveragedModel"  # the class of their instances' values
LEGACY_CUDA_CTORS = _set("torch", "legacy_cuda_ctors")
NO_GRAD_CONTEXTS = frozenset("torch." + n for n in _DATA["torch"]["no_grad_contexts"])
NO_GRAD_METHODS = _set("torch", "no_grad_methods")
INT_DTYPES = _set("torch", "int_dtypes")
BOOL_DTYPES = _set("torch", "bool_dtypes")

# tensor methods and attributes
BOOL_METHODS = _set("tensor", "bool_methods")
DTYPE_PRESERVING_METHODS = _set("tensor", "dtype_preserving_methods")
INT_METHODS = _set("tensor", "int_methods")
CAST_OR_VIEW_METHODS = _set("tensor", "cast_or_view_methods")
RANDOM_INPLACE_METHODS = _set("tensor", "random_inplace_methods")
FLOAT_METHODS = _set("tensor", "float_methods")
HOST_METHODS = _set("tensor", "host_methods")
HOST_ATTRS = _set("tensor", "host_attrs")
SAME_TENSOR_ATTRS = _set("tensor", "same_tensor_attrs")
MULTI_OUTPUT_METHODS = _set("tensor", "multi_output_methods")
TENSOR_ONLY_METHODS = _set("tensor", "tensor_only_methods")
CONTAINER_METHODS = _set("tensor", "container_methods")
NOT_TENSOR_METHODS = _set("tensor", "not_tensor_methods")
TENSOR_METHODS = _set("tensor", "methods")

# logging levels by name (`logger.debug` is DEBUG)
LOG_LEVELS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40, "EXCEPTION": 40, "CRITICAL": 50, "FATAL": 50}

# NumPy
NUMPY_ARRAY_FUNCTIONS = _set("numpy", "array_functions")
NUMPY_ARRAY_METHODS = _set("numpy", "array_methods")
NUMPY_KEEP_METHODS = _set("numpy", "keep_methods")
NUMPY_ONLY_METHODS = _set("numpy", "array_only_methods")
NUMPY_SAMPLERS = dict(_DATA["numpy"]["samplers"])

# nn.Module
KERNEL_DECORATORS = _set("kernels", "decorators")
MODULE_SUFFIXES = tuple(_DATA["modules"]["base_suffixes"])
MODULE_BASE_NAMES = _set("modules", "base_names")
# what torch.nn holds that is no module: tensors, functions, utilities
_NN_NOT_MODULES = ("torch.nn.functional.", "torch.nn.utils.", "torch.nn.init.", "torch.nn.parameter.")


def torch_layer(q: str) -> bool:
    """`torch.nn.Linear`, `torch.nn.modules.conv.Conv2d`: a class of torch.nn, each an nn.Module
    (a subclass is one too), but for `Parameter`, `Buffer` and what the functional and utility
    namespaces hold."""
    last = q.rsplit(".", 1)[-1]
    return q.startswith("torch.nn.") and last[:1].isupper() and not q.startswith(_NN_NOT_MODULES) \
        and last not in ("Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer")
MODULE_SELF_RETURNING = _set("modules", "self_returning")
MODULE_ONLY_METHODS = _set("modules", "module_only_methods")
SUBMODULE_METHODS = _set("modules", "submodule_methods")
HOT_FUNCTION_NAMES = _set("modules", "hot_functions")
BATCH_PARAM_NAMES = _set("modules", "batch_params")
# base class (or package, ending in ".") -> the methods its framework calls at every batch
FRAMEWORK_HOOKS = {k: frozenset(v) for k, v in _DATA["modules"]["framework_hooks"].items()}
FRAMEWORK_HOOK_NAMES = frozenset().union(*FRAMEWORK_HOOKS.values())
# base class -> "method.parameter" that its framework fills with host data
HOST_PARAMETERS = {k: frozenset(v) for k, v in _DATA["modules"]["host_parameters"].items()}
HOST_PARAMETER_METHODS = frozenset(m.split(".")[0] for v in HOST_PARAMETERS.values() for m in v)
REGISTRY_HOST_PARAMETERS = {k: frozenset(v) for k, v in _DATA["modules"]["registry_host_parameters"].items()}


def framework_calls(base: str, method: str) -> bool:
    """Whether the framework of the library class `base` calls a subclass's `method` at
    every batch (`framework_hooks`)."""
    if method in FRAMEWORK_HOOKS.get(base, ()):
        return True
    package = base[:base.find(".") + 1]
    return bool(package) and method in FRAMEWORK_HOOKS.get(package, ())


INITIALISERS = frozenset(_DATA["modules"]["initialisers"])
REQUEST_HOOKS = {k: frozenset(v) for k, v in _DATA["modules"]["request_hooks"].items()}
REQUEST_HOOK_NAMES = frozenset().union(*REQUEST_HOOKS.values())


def request_calls(base: str, method: str) -> bool:
    """Whether the framework of the library class `base` calls a subclass's `method` once
    per request (`request_hooks`: an inferencer's `__call__`)."""
    return method in REQUEST_HOOKS.get(base, ())


# registries (`semantic.registries`): the methods that put a class in one, build from a
# config through one, or give a class of one by name; and the functions that build from a
# config through the registry they are given (name -> (position, keyword))
REGISTRY_REGISTERS = frozenset(_DATA["modules"]["registries"]["register"])
REGISTRY_BUILDS = frozenset(_DATA["modules"]["registries"]["build"])
REGISTRY_LOOKUPS = frozenset(_DATA["modules"]["registries"]["lookup"])
REGISTRY_BUILD_FUNCTIONS = {f: (int(a[0]), str(a[1])) for f, a in _DATA["modules"]["registries"]["build_functions"].items()}


# debug and visualisation code (`heat.debug_helper`, `heat.debug_flag`)
DEBUG_WORDS = _set("rarity", "debug_words")
CHECK_WORDS = _set("rarity", "check_words")
DEBUG_BASES = _set("rarity", "debug_bases")

LIGHTNING_STEP_HOOKS = _set("modules", "lightning_step_hooks")
LIGHTNING_LOG_METHODS = {k: tuple(v) for k, v in _DATA["modules"]["lightning_log_methods"].items()}
LIGHTNING_MODULE_BASES = tuple(_DATA["modules"]["lightning_module_bases"])
LIGHTNING_SETUP_HOOKS = _set("modules", "lightning_setup_hooks")
LIGHTNING_INT_ATTRS = _set("modules", "lightning_int_attrs")
LIGHTNING_OPTIMIZER_METHODS = _set("modules", "lightning_optimizer_methods")
LIGHTNING_PER_STEP_LOGGING = _set("modules", "lightning_per_step_logging")
LIGHTNING_EVAL_STEPS = _set("modules", "lightning_eval_steps")
OPTIMIZER_PREFIXES = tuple("torch." + p for p in _DATA["torch"]["optimizer_prefixes"])
LAYER_PACKAGES = tuple(_DATA["modules"]["layer_packages"])
LAYER_CONTAINERS = _set("modules", "layer_containers")


def optimizer_base(q: str) -> bool:
    """`torch.optim.Optimizer`, `torch.optim.AdamW`: a torch optimizer class (not a scheduler)."""
    return q.startswith(OPTIMIZER_PREFIXES) and ".lr_scheduler" not in q and q.rsplit(".", 1)[-1][:1].isupper()


def lightning_module_base(q: str) -> bool:
    """`pytorch_lightning.LightningModule`, `lightning.LightningModule`: Lightning's module class."""
    return q == "LightningModule" or q.endswith(LIGHTNING_MODULE_BASES)


def library_layer(q: str) -> bool:
    """`torch.nn.LayerNorm`: a library layer class whose forward computes where its input is."""
    last = q.rsplit(".", 1)[-1]
    return q.startswith(LAYER_PACKAGES) and last[:1].isupper() and last not in LAYER_CONTAINERS


MODULE_NAME_WORDS = _set("modules", "name_words")
MODULE_DICTS = _set("modules", "module_dicts")
MODULE_METHODS = _set("modules", "module_methods")
MODULE_SEQUENCES = _set("modules", "module_sequences")
MODULE_NAME_ENDINGS = tuple(_DATA["modules"]["name_endings"])


# iteration and loaders
PASSTHROUGH = _set("iteration", "passthrough")
PASSTHROUGH_METHODS = _set("iteration", "passthrough_methods")
LOADERS = _set("iteration", "loaders")
LOADER_NAME_SUFFIXES = tuple(_DATA["iteration"]["loader_name_suffixes"])
LOADER_NAMES = _set("iteration", "loader_names")
BATCH_SAMPLERS = _set("iteration", "batch_samplers")
HOST_SIDE_METHODS = _set("iteration", "host_side_methods")
# the patterns as one expression (asked for every base of every method of a file's classes)
_HOST_SIDE_PATTERN = re.compile("|".join(f"(?:{translate(m)})" for m in sorted(HOST_SIDE_METHODS) if "*" in m) or "(?!)")
# the method names the entries end in (none a pattern): a method of another name is none of them
HOST_SIDE_METHOD_NAMES = frozenset(m.rsplit(".", 1)[-1] for m in HOST_SIDE_METHODS)
assert not any("*" in n for n in HOST_SIDE_METHOD_NAMES), "a host_side_methods pattern must name its method"


def is_host_side_method(name: str) -> bool:
    """`Base.method` (qualified) is one a data pipeline calls in DataLoader workers: listed,
    or matched by a pattern (`mmdet.datasets.transforms.*.transform`: any class there)."""
    return name in HOST_SIDE_METHODS or _HOST_SIDE_PATTERN.match(name) is not None


RETURNS_ARGUMENTS = {f: tuple(a) for f, a in _DATA["wrappers"]["returns_arguments"].items()}
PARTIALS = frozenset(("functools.partial",))  # (bind arguments: as a value, the function only where none is positional)
PER_ITEM_APPLY = frozenset(_DATA["wrappers"]["per_item_apply"])
HOST_DECIDING_OPTIMIZERS = _set("wrappers", "host_deciding_optimizers")
LARC = "apex.parallel.LARC.LARC"  # the class every such optimizer's instance is known as
SCALER_CALLABLES = {f: tuple(a) for f, a in _DATA["wrappers"]["scaler_callables"].items()}
NATIVE_SCALER = "timm.utils.NativeScaler"  # the class every such scaler's instance is known as
# pytorch-metric-learning: its losses' and miners' instances are known by these class keys
_PML = _DATA["metric_learning"]
PML_PREFIX = _PML["package"] + "."
PML_CLASSES = {name: kind for kind in ("masked_losses", "all_pairs_losses", "pair_losses", "triplet_losses",
                                      "pair_miners", "triplet_miners") for name in _PML[kind]}
PML_PAIRS = "pytorch_metric_learning:pairs"  # what a pair miner's call returns: (a1, p, a2, n)


def pml_class(q: str) -> str:
    """The class key of a pytorch-metric-learning loss or miner that `q` names (whichever
    module it is imported from), or ""."""
    name = q.rpartition(".")[2]
    return PML_PREFIX + name if q.startswith(PML_PREFIX) and name in PML_CLASSES else ""


def pml_kind(cls: str) -> str:
    """Which of library.toml's [metric_learning] lists the class key is in, or ""."""
    return PML_CLASSES.get(cls[len(PML_PREFIX):], "") if cls.startswith(PML_PREFIX) else ""


PER_STEP_HOOKS = _set("iteration", "per_step_hooks")
REPEAT_CALLERS = {f: tuple(a) for f, a in _DATA["iteration"]["repeat_callers"].items()}
TEMPLATE_METHODS = {m: tuple(c) for m, c in _DATA["iteration"]["template_methods"].items()}

# accelerate / Lightning Fabric
PREPARE_OWNERS = _set("accelerate", "prepare_owners")
TOKENIZER_PACKAGES = _set("tokenizers", "packages")
TOKENIZER_SUFFIXES = tuple(_DATA["tokenizers"]["class_suffixes"])
TOKENIZER_MAKERS = _set("tokenizers", "makers")
TOKENIZER_ENCODE = _set("tokenizers", "encode_methods")
TENSORS_KEYWORD, TENSORS_VALUE = _DATA["tokenizers"]["tensors_keyword"]
TOKENIZE_FUNCTIONS = _set("tokenizers", "functions")
TOKENIZER_DECODE = _set("tokenizers", "decode_methods")
PRETRAINED_PACKAGES = _set("pretrained", "packages")
PRETRAINED_OBJECTS = tuple(_DATA["pretrained"]["object_suffixes"])
PRETRAINED_FOREIGN = tuple(_DATA["pretrained"]["object_prefixes"])
PRETRAINED_ANNOTATION_OBJECTS = tuple(_DATA["pretrained"]["annotation_object_suffixes"])
PRETRAINED_ATTRIBUTE_SETTERS = _set("pretrained", "attribute_setters")
GENERATE_METHODS = _set("pretrained", "generate_methods")
GENERATE_CLASS_SUFFIXES = tuple(_DATA["pretrained"]["generate_class_suffixes"])


def tokenizer_class(q: str) -> bool:
    """`transformers.BertTokenizer`, `transformers.AutoProcessor`: a tokenizer's class."""
    return q.split(".", 1)[0] in TOKENIZER_PACKAGES and q.rsplit(".", 1)[-1].endswith(TOKENIZER_SUFFIXES)


def pretrained_model(cls: str) -> bool:
    """A class of a pretrained package (`transformers`, `diffusers`) by its last name, whose
    `from_pretrained` builds a model (an nn.Module): not a configuration, a scheduler, a
    pipeline of modules, nor a JAX or TensorFlow twin."""
    return not cls.endswith(PRETRAINED_OBJECTS) and not cls.startswith(PRETRAINED_FOREIGN)


def pretrained_model_class(q: Optional[str]) -> bool:
    """`transformers.T5EncoderModel`, `diffusers.AutoencoderKL` named as a type (an
    annotation): a model class of a pretrained package; not a tokenizer or processor, nor a
    class that is no model (`TrainingArguments`, `BaseOutput`)."""
    if q is None or "." not in q or q.split(".", 1)[0] not in PRETRAINED_PACKAGES:
        return False
    cls = q.rsplit(".", 1)[1]
    return (cls[:1].isupper() and pretrained_model(cls) and not cls.endswith(PRETRAINED_ANNOTATION_OBJECTS)
            and not cls.endswith(TOKENIZER_SUFFIXES) and "Tokenizer" not in cls)
TOKENIZER = "transformers.PreTrainedTokenizer"  # the class every tokenizer's instance is known as
ENCODING = "transformers.BatchEncoding"  # the class of the CPU tensors one gives
ARG_PARSERS = _set("arguments", "parsers")
ARG_PARSER = sorted(ARG_PARSERS)[0]  # the class every parser (and group) is known as
ARG_NAMESPACE = _DATA["arguments"]["namespace"]
ARG_ADD_METHODS = _set("arguments", "add_methods")
ARG_GROUP_METHODS = _set("arguments", "group_methods")
ARG_PARSE_METHODS = _set("arguments", "parse_methods")
COLLECTIVE_METHODS = _set("accelerate", "collective_methods")
PREPARE_METHODS = _set("accelerate", "prepare_methods")

# experiment trackers: what they read back (see library.toml)
TRACKER_WRITERS = tuple(_DATA["trackers"]["writers"])
WRITER = TRACKER_WRITERS[0]  # the class every writer's instance is known as
WRITER_METHODS = {m: tuple(a) for m, a in _DATA["trackers"]["writer_methods"].items()}
TRACKER_FUNCTIONS = {f: tuple(a) for f, a in _DATA["trackers"]["functions"].items()}
METRIC_LOADERS = _set("trackers", "metric_loaders")
METRIC = "evaluate.EvaluationModule"  # the class every loaded metric is known as
METRIC_METHODS = _set("trackers", "metric_methods")
METRIC_INPUTS = _set("trackers", "metric_inputs")
SAME_DEVICE_FUNCTIONS = _set("trackers", "same_device")
TRANSFORM_MODULES = _set("transforms", "modules")
TRANSFORM = "torchvision.transforms.Compose"  # the class every transform's instance is known as
NORMALIZERS = _set("transforms", "normalizers")
NORMALIZER_FUNCTIONS = _set("transforms", "normalizer_functions")
NORMALIZES = "normalizes"  # the `py` tag of a NORMALIZERS transform's instance
TO_TENSOR = _set("transforms", "to_tensor")

# host-side libraries
PYTHON_MODULES = _set("host", "python_modules")
NUMPY_MODULES = _set("host", "numpy_modules")
TIMING_NAMES = _set("host", "timing")
ACCUMULATION_STEPS = _set("host", "accumulation_steps")
LIBRARY_ROOTS = _set("host", "library_roots") | PYTHON_MODULES | NUMPY_MODULES
PYTHON_BUILTINS = _set("host", "python_builtins")
