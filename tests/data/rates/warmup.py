import torch


class Graphs:
    """An engine's CUDA-graph capture (lightllm's `CudaGraph._capture_decode`): a warm-up pass
    written as a loop of one pass, then the capture."""

    def capture(self, decode, ids):
        for _ in range(1):
            torch.cuda.synchronize()  # [once] a loop of one pass runs where it is: once, at start-up
            decode(ids)
        for _ in range(0):
            torch.cuda.synchronize()  # [once] nor does a loop of none
        for _ in range(2):
            torch.cuda.synchronize()  # [per-step] near miss: two passes repeat it
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            decode(ids)
        return graph


def serve(decode, ids):
    graphs = Graphs()
    graphs.capture(decode, ids)
