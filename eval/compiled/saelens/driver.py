"""SAELens's LanguageModelSAETrainingRunner run three times on the CPU with `compile_sae=True`: a TopK, a
BatchTopK and a JumpReLU SAE (the latter with `pre_act_loss_coefficient=3e-6`, "Anthropic's setup" in the
config's docstring), each trained for 4 steps on the activations of a language model's MLP output, through
the runner's own _compile_if_needed (which compiles the SAE's bound training_forward_pass) and its SAETrainer.
The SAE's class comes from the configured architecture through the program's registry, as in any run.

Replaced, through the runner's own override_model and override_dataset arguments (the program warns that the
run is then not reproducible from the configuration alone): the language model (gelu-2l, downloaded by
load_model) by a random 1-layer HookedTransformer of TransformerLens (width 16, vocabulary 64, no tokenizer), and
the dataset (a Hugging Face hub path) by 64 synthetic pre-tokenized rows of 16 tokens. W&B logging, checkpoints
and outputs are off (log_to_wandb=False, checkpoint_path=None, output_path=None), and the run has a fixed W&B id
(the wandb installed here no longer has the `wandb.util.generate_id` the config calls without one); the run
happens in a temporary folder."""

import os
import tempfile

import torch

os.environ.setdefault("WANDB_MODE", "disabled")

from datasets import Dataset  # noqa: E402
from transformer_lens import HookedTransformer, HookedTransformerConfig  # noqa: E402

from sae_lens import (  # noqa: E402
    BatchTopKTrainingSAEConfig,
    JumpReLUTrainingSAEConfig,
    LanguageModelSAERunnerConfig,
    LanguageModelSAETrainingRunner,
    LoggingConfig,
    TopKTrainingSAEConfig,
)

os.chdir(tempfile.mkdtemp(prefix="saelens_"))
torch.manual_seed(0)

model = HookedTransformer(HookedTransformerConfig(n_layers=1, d_model=16, d_head=4, n_heads=4, d_mlp=32, n_ctx=32,
                                                  d_vocab=64, act_fn="gelu", normalization_type="LN"))
gen = torch.Generator().manual_seed(0)
dataset = Dataset.from_dict({"tokens": torch.randint(0, 64, (64, 16), generator=gen).tolist()})

saes = [
    TopKTrainingSAEConfig(d_in=16, d_sae=64, k=4),
    BatchTopKTrainingSAEConfig(d_in=16, d_sae=64, k=4),
    JumpReLUTrainingSAEConfig(d_in=16, d_sae=64, pre_act_loss_coefficient=3e-6),
]
for sae_cfg in saes:
    cfg = LanguageModelSAERunnerConfig(
        sae=sae_cfg, model_name="tiny-random", hook_name="blocks.0.hook_mlp_out", dataset_path="synthetic",
        is_dataset_tokenized=True, streaming=False, context_size=16, prepend_bos=False,
        sequence_separator_token=None, training_tokens=4 * 32, train_batch_size_tokens=32,
        n_batches_in_buffer=2, store_batch_size_prompts=2, device="cpu", compile_sae=True,
        logger=LoggingConfig(log_to_wandb=False, wandb_id="driver"), checkpoint_path=None, output_path=None, n_checkpoints=0,
        verbose=False,
    )
    LanguageModelSAETrainingRunner(cfg, override_dataset=dataset, override_model=model).run()
