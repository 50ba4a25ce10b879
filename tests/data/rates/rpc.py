import torch


class Worker:
    """An RPC worker: its loop reads a method's name from a channel and calls that method of
    itself (`getattr(self, func_name)(*args)`); the client's methods send the names."""

    def __init__(self, chan):
        self.chan = chan

    def rpc_loop(self):
        while True:
            func_name, args = self.chan.read()
            getattr(self, func_name)(*args)

    def init_model(self, size):
        self.table = torch.zeros(size, device="cuda")
        return self.table.sum().item()  # [once] its name is sent once, at start-up

    def prefill(self, reqs):
        ids = torch.tensor(reqs, device="cuda")  # [per-step] its name is sent every step
        return ids.cpu()  # [per-step]

    def decode(self):
        fn = getattr(self, "sample")  # a literal: the method it names, not a dispatch
        return fn(self.table)

    def sample(self, logits):
        return logits.argmax().item()  # [once] near miss: named only in getattr with a literal

    def unsent(self, x):
        return x.sum().item()  # [once] near miss: the loop dispatches, but no caller sends its name

    def probed(self, x):
        return x.max().item()  # [once] near miss: a loop only tests that it exists (hasattr)


class Plain:
    def stats(self, x):
        return x.mean().item()  # [once] near miss: its name is sent, but its class dispatches nothing


class Client:
    def __init__(self, chan):
        self.chan = chan

    def init_model(self, size):
        self.chan.write("init_model", (size,))

    def prefill(self, reqs):
        self.chan.write("prefill", (reqs,))


def serve(chan, batches, worker):
    client = Client(chan)
    client.init_model(16)
    for reqs in batches:
        client.prefill(reqs)
        chan.write("stats", ())
        if hasattr(worker, "probed"):
            chan.flush()
