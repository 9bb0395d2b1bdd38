"""`python -m ix` is the `ix` command."""

from ix.cli import main

main()
