"""Options every command shares, declared once."""

from typing import Annotated

import typer

Lab = Annotated[str | None, typer.Option(
    "--lab", help="The lab: a path, or a name searched from the project root. "
                  "Default: walk up from the working directory.", show_default=False)]
