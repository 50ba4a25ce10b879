"""AIMNet2 through AIMNet2Calculator(compile_model=True) on the CPU: the model built from the
repository's own aimnet/models/aimnet2.yaml (random weights: the trained ones are downloaded),
energy and forces of octane (C8H18, a rough zig-zag geometry) evaluated 3 times, then of a batch
of two octanes, as the calculator's users do in an optimisation loop. On the CPU the calculator
flattens molecules and builds a neighbour matrix (nvalchemiops' neighbour list, Warp's CPU
kernels): the model runs in its neighbour-matrix mode. The yaml's LRCoulomb output is moved out of
the network, as the export of a trained model does (needs_coulomb metadata, external module)."""

import math

import torch

from aimnet.calculators import AIMNet2Calculator
from aimnet.config import build_module

torch.manual_seed(0)


def octane():
    carbons = [(1.27 * i, 0.85 * (i % 2), 0.0) for i in range(8)]
    coord, numbers = list(carbons), [6] * 8
    for i, (x, y, z) in enumerate(carbons):
        n_h = 3 if i in (0, 7) else 2
        for k in range(n_h):
            a = 2 * math.pi * k / n_h
            coord.append((x, y + (-1.0 if i % 2 == 0 else 1.0) * 0.6, z + 0.9 * math.cos(a)))
            numbers.append(1)
    return torch.tensor(coord), torch.tensor(numbers)


model = build_module("aimnet/models/aimnet2.yaml")
# As aimnet/models/utils.py exports a trained model: the long-range Coulomb output leaves the
# network and the calculator attaches it as an external module (run eagerly after the model).
del model.outputs["lrcoulomb"]
calc = AIMNet2Calculator(model, device="cpu", compile_model=True, needs_coulomb=True, needs_dispersion=False)
coord, numbers = octane()
for step in range(3):
    out = calc.eval({"coord": coord + 0.01 * step, "numbers": numbers, "charge": 0.0}, forces=True)
batch = {"coord": torch.stack([coord, coord + 0.02]), "numbers": torch.stack([numbers, numbers]),
         "charge": torch.zeros(2)}
out = calc.eval(batch, forces=True)
print(out["energy"], out["forces"].shape)
