import torch


class InferState:
    def init_extra_state(self, input_ids):
        self.total = input_ids.numel()


class LlamaInferState(InferState):
    def init_extra_state(self, input_ids):
        self.max_len = input_ids.max().item()  # [per-step] the state class a subclass's attribute names


class Unnamed(InferState):
    pass


class Offline:
    def init_extra_state(self, input_ids):
        self.max_len = input_ids.min().item()  # [once] near miss: a method of that name, in a class nobody names
