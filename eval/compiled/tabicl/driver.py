"""TabICL's own pretraining loop with --model_compile True, on the CPU: the repository's Trainer
(src/tabicl/train/_run.py), built from its own argument parser with the architecture flags of
scripts/train_v2_clf_stage1.sh (target-aware column embedding, feature groups "same", no affine,
classification with max_classes 10), shrunk (embedding 16, one block per stage, 2 heads, 8 inducing
points), 3 steps of 4 tables (micro batches of 2) of at most 48 rows and 6 features.

Replaced: wandb (imported at the top of _run.py; logging is off) and xgboost (imported by the tree
prior; the driver uses the MLP prior, "mlp_scm", instead of the recipe's graph prior, to keep data
generation short) by empty modules; the prior is the program's own, generated on the fly in one
DataLoader worker. Checkpoints go to a temporary folder (none is written in 3 steps)."""

import sys
import tempfile
import types

sys.path.insert(0, "src")
sys.modules["wandb"] = types.ModuleType("wandb")
_xgb = types.ModuleType("xgboost")
_xgb.XGBRegressor = object
sys.modules["xgboost"] = _xgb

import torch  # noqa: E402

torch.set_num_threads(1)

from tabicl.train._run import Trainer  # noqa: E402
from tabicl.train._train_config import build_parser  # noqa: E402

ckpt = tempfile.mkdtemp(prefix="tabicl-ckpt-")
args = [
    "--device", "cpu", "--dtype", "float32", "--amp", "False", "--model_compile", "True",
    "--max_steps", "3", "--batch_size", "4", "--micro_batch_size", "2", "--lr", "1e-3",
    "--prior_type", "mlp_scm", "--prior_device", "cpu", "--n_jobs", "1", "--batch_size_per_gp", "2",
    "--min_features", "2", "--max_features", "6", "--max_classes", "10",
    "--min_seq_len", "32", "--max_seq_len", "48", "--min_train_size", "0.5", "--max_train_size", "0.8",
    "--embed_dim", "16", "--col_num_blocks", "1", "--col_nhead", "2", "--col_num_inds", "8",
    "--col_affine", "False", "--col_feature_group", "same", "--col_feature_group_size", "3",
    "--col_target_aware", "True", "--col_ssmax", "True",
    "--row_num_blocks", "1", "--row_nhead", "2", "--row_num_cls", "2", "--row_rope_interleaved", "False",
    "--icl_num_blocks", "1", "--icl_nhead", "2", "--icl_ssmax", "True",
    "--ssmax_type", "qassmax-mlp-elementwise", "--ff_factor", "2", "--norm_first", "True",
    "--zero_init", "False", "--use_flash_attn3", "False",
    "--checkpoint_dir", ckpt, "--save_temp_every", "1000", "--save_perm_every", "1000",
]
config = build_parser().parse_args(args)
trainer = Trainer(config)
trainer.train()
