"""WhisperSpeech T2S generation with torch_compile=True, CPU: a randomly initialised
TSARTransformer of the repository's "micro" size (_make_model: depth 2, 3 heads, ffn_mult 1) with
short text and semantic-token lengths, optimize() as the pipeline calls it (float32 on the CPU
instead of float16), then generate() of 12 semantic tokens for an English sentence, twice. The
trained checkpoint is downloaded from the hub in the real pipeline."""

import torch

from whisperspeech.t2s_up_wds_mlang_enclm import TSARTransformer

torch.manual_seed(0)
model = TSARTransformer(depth=2, n_head=3, ffn_mult=1, ttoks_len=48, stoks_len=16, stoks_codes=1025).eval()
model.optimize(max_batch_size=1, dtype=torch.float32, torch_compile=True)
for _ in range(2):
    toks = model.generate("Hello from a compiled model.", cps=15, lang="en", N=12, show_progress_bar=False)
print(toks.shape)
