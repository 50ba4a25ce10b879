"""Stand-in for torchvision on the GPU recording machine: see scripts/stand_ins/README.md."""
