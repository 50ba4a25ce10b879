"""Recovery paths run rarely: an exception handler runs after an error only (an out-of-memory
fallback), and a branch on a parameter compared with a constant runs only through the calls
that pass that constant, so one that only such a handler's call selects runs as rarely.
`tests/data/rates/recovery.py` marks each finding's line with the rate it must get, each
beside its near miss: the try body, `finally`, a branch the per-step call selects too, a
branch selected by a value not known here, a handler that restarts an iterator."""

from __future__ import annotations

from pathlib import Path

from synclint.engine import lint_source
from synclint.testing import marked_rates, rates_at_marks

SOURCE = (Path(__file__).parent / "data" / "rates" / "recovery.py").read_text()


def test_a_recovery_path_runs_once_and_its_near_misses_keep_their_rate():
    expected = marked_rates(SOURCE)
    found = lint_source(SOURCE, "matcher.py")
    assert {f.row: f.rate for f in found if f.row in expected} == expected
    assert all(f.hot == (f.rate == "per-step") for f in found if f.row in expected)


def test_the_chain_says_why_a_recovery_path_is_rare():
    chains = {f.row: f.rate_chain for f in lint_source(SOURCE, "matcher.py")}
    handler = next(i for i, line in enumerate(SOURCE.splitlines(), 1) if "the handler runs after" in line)
    branch = next(i for i, line in enumerate(SOURCE.splitlines(), 1) if "only the call in the" in line)
    assert "except RuntimeError" in chains[handler][-1]
    assert 'where == "cpu"' in chains[branch][-1] and "except RuntimeError" in chains[branch][-1]


LAZY = (Path(__file__).parent / "data" / "rates" / "lazy.py").read_text()


def test_a_lazy_initialisation_through_a_property_and_a_setter_runs_once():
    # (diffusers-style schedulers: `if self.step_index is None: self._init_step_index(t)`,
    # where the property returns `self._step_index` and the method sets it)
    found, expected = rates_at_marks(LAZY, "scheduler.py")
    assert found == expected


PROPERTIES = (Path(__file__).parent / "data" / "rates" / "properties.py").read_text()


def test_reading_a_property_runs_its_getter_as_often_as_the_read():
    # (mmpose's RealNVP: `self.prior` builds a distribution on every read from a loss's
    # forward); a cached property, one read in __init__ and a method never called stay once
    found, expected = rates_at_marks(PROPERTIES, "flow.py")
    assert found == expected


SHAPES = (Path(__file__).parent / "data" / "rates" / "shapes.py").read_text()


def test_code_that_remakes_a_cache_when_a_shape_changes_runs_once():
    # (YOLOX's grids, mmyolo's `if current_featmap_sizes != self.featmap_sizes_train:`: the
    # body stores what the test read, so the test fails until the input size changes)
    found, expected = rates_at_marks(SHAPES, "head.py")
    assert found == expected


DISPATCH = (Path(__file__).parent / "data" / "rates" / "dispatch.py").read_text()


def test_a_dispatch_table_calls_each_of_its_entries_at_the_rate_of_the_call():
    # (DETR-style criteria: `loss_map = {"labels": self.loss_labels, ...}; loss_map[loss](...)`
    # every step; a table kept on `self`, one of functions); a table that is only listed, and
    # a method in none, stay once
    found, expected = rates_at_marks(DISPATCH, "criterion.py")
    assert found == expected


COUNTERS = (Path(__file__).parent / "data" / "rates" / "counters.py").read_text()


def test_a_gpu_value_compared_with_zero_is_no_first_step_test():
    # (EAGLE's `evaluate_posterior`: `if accept_length == 0:` where the greedy path's
    # `accept_length` is a CUDA max and the other path's a counter it increments); a counter's
    # `== 0` stays the first step only
    found, expected = rates_at_marks(COUNTERS, "decode.py")
    assert found == expected


WARMUP = (Path(__file__).parent / "data" / "rates" / "warmup.py").read_text()


def test_a_loop_of_one_pass_adds_no_rate():
    # (lightllm's CUDA-graph warm-up, `for _ in range(1): synchronize(); decode(...)`, at
    # start-up); a loop of two passes still repeats its body
    found, expected = rates_at_marks(WARMUP, "cuda_graph.py")
    assert found == expected


RPC = (Path(__file__).parent / "data" / "rates" / "rpc.py").read_text()


def test_a_method_called_by_a_name_read_from_a_channel_runs_as_often_as_its_name_is_sent():
    # (an inference engine's model worker, lightllm's `ModelRpcServer.rpc_loop`:
    # `getattr(self, func_name)(*args)` in `while True:`, the names written by the client's
    # `prefill`/`decode`, called every engine step, and `init_model`, called once); a method
    # named by no sender, one named only in `getattr`/`hasattr`, and one of a class that
    # dispatches nothing stay once
    found, expected = rates_at_marks(RPC, "model_rpc.py")
    assert found == expected


MODES = (Path(__file__).parent / "data" / "rates" / "modes.py").read_text()


def test_a_method_of_an_attribute_made_of_one_of_many_classes_runs_each_classs_method():
    # (lightllm's `self.backend = ...Backend()` in one of twenty branches of `init_model`, then
    # `self.backend.decode()` every engine step: each mode's method runs as often); a class no
    # branch builds stays once
    found, expected = rates_at_marks(MODES, "engine.py")
    assert found == expected


FORWARD_ALIAS = (Path(__file__).parent / "data" / "rates" / "forward_alias.py").read_text()


def test_a_method_set_as_the_forward_in_init_runs_every_step():
    # (Open-Sora's MMDiT: `self.forward = self.forward_ckpt` in `__init__`); a method held on
    # another attribute, and one nothing names, stay once
    found, expected = rates_at_marks(FORWARD_ALIAS, "dit.py")
    assert found == expected


CACHED = (Path(__file__).parent / "data" / "rates" / "cached_attrs.py").read_text()


def test_a_branch_that_sets_the_attribute_its_hasattr_test_asks_for_runs_once():
    # (mmtracking's FlowNetSimple: `if not hasattr(self, 'img_norm_mean'): self.img_norm_mean =
    # torch.tensor(...)`, and SiamRPN's head caching its Hanning windows); a body that sets
    # another attribute, a test of another object and `hasattr` without `not` stay per step
    found, expected = rates_at_marks(CACHED, "head.py")
    assert found == expected


DECIDED = (Path(__file__).parent / "data" / "rates" / "decided.py").read_text()


def test_a_branch_whose_type_test_the_model_decides_false_is_never_taken():
    # (LTX-Video's `if not torch.is_tensor(current_timestep):` where `t` comes from iterating
    # the scheduler's timesteps tensor); the same test of Python floats, and of items of
    # unknown kind, stays per step
    found, expected = rates_at_marks(DECIDED, "pipe.py")
    assert found == expected
