"""Evidence tools and their backends; every tool is one ToolSpec in `pipeline.tools.registry`."""

from pipeline.tools.registry import ToolBox, build_toolbox

__all__ = ["ToolBox", "build_toolbox"]
