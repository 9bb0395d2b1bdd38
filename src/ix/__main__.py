"""`python -m ix` is the `ix` command."""

from ix.cli.main import main

main()
