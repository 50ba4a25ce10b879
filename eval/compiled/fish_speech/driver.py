"""fish-speech's generate() with compile=True on the CPU: inference.py's own init_model (which
compiles decode_one_token_ar with backend aot_eager, fullgraph=True, since CUDA is absent) and
generate(), 8 new tokens from a 6-token prompt, bfloat16 as main() uses. The checkpoint is
replaced by a tiny randomly initialised DualARTransformer (2 slow layers of width 32, 1 fast
layer, 2 codebooks of 16): DualARTransformer.from_pretrained reads weights from disk, and the
tokenizer by a stand-in that only answers get_token_id (the model asks for <|im_end|>'s id)."""

import torch

from fish_speech.models.text2semantic import inference
from fish_speech.models.text2semantic.llama import DualARModelArgs, DualARTransformer

torch.manual_seed(0)
IM_END = 60
config = DualARModelArgs(vocab_size=64, n_layer=2, n_head=2, dim=32, head_dim=16, intermediate_size=64,
                         codebook_size=16, num_codebooks=2, semantic_begin_id=40, semantic_end_id=55,
                         max_seq_len=32, n_fast_layer=1, use_gradient_checkpointing=False)


class Tokenizer:
    def get_token_id(self, token):
        return IM_END


def tiny_checkpoint(path, load_weights=True, **kw):
    model = DualARTransformer(config)
    model.tokenizer = Tokenizer()
    return model


DualARTransformer.from_pretrained = staticmethod(tiny_checkpoint)
model, decode_one_token = inference.init_model("unused", "cpu", torch.bfloat16, compile=True)
prompt = torch.zeros(3, 6, dtype=torch.int)
prompt[0] = torch.tensor([1, 2, 41, 42, 43, 44])
prompt[1:, 2:] = torch.randint(0, 16, (2, 4))
out = inference.generate(model=model, prompt=prompt, max_new_tokens=8, audio_masks=None, audio_parts=None,
                         decode_one_token=decode_one_token, temperature=0.7, top_p=0.7, top_k=30)
print(out.shape)
