"""`python -m hcmigrate` runs the command line."""

from hcmigrate.cli import main

if __name__ == "__main__":
    main()
