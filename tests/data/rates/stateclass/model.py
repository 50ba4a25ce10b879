import torch
import torch.nn as nn

from stateclass_pkg.state import InferState, LlamaInferState


class LocalState:
    def prepare(self, x):
        return x.sum().item()  # [per-step] the in-file class a class attribute names


class Listed:
    def prepare(self, x):
        return x.mean().item()  # [once] near miss: named in a tuple, never made an instance


class BaseModel(nn.Module):
    infer_state_class = InferState
    local_state_class = LocalState
    known = (Listed,)

    def _create_inferstate(self):
        state = self.infer_state_class()
        return state

    def forward(self, input_ids):
        state = self._create_inferstate()
        state.init_extra_state(input_ids)
        local = self.local_state_class()
        return local.prepare(input_ids)


class LlamaModel(BaseModel):
    infer_state_class = LlamaInferState
