"""Print the `[tensor] methods` list of synclint/semantic/library.toml: every public
method of `torch.Tensor` in the installed torch. The model reads it to tell a tensor from
what was only taken for one: a method no tensor has (detectron2's `Instances.has`) says the
receiver is something else.

    python scripts/tensor_methods.py   # paste its output over the list in library.toml
"""

import textwrap

import torch


def main() -> None:
    names = sorted(n for n in dir(torch.Tensor) if not n.startswith("_") and callable(getattr(torch.Tensor, n)))
    body = ", ".join(f'"{n}"' for n in names)
    print(f"# every public method of torch.Tensor (torch {torch.__version__.split('+')[0]}; "
          "scripts/tensor_methods.py)")
    print("methods = [")
    print(textwrap.fill(body, 100, initial_indent="  ", subsequent_indent="  "))
    print("]")


if __name__ == "__main__":
    main()
