"""`python -m hcmigrate.verify ...` is `hcmigrate verify ...`."""

from hcmigrate.verify.command import verify

if __name__ == "__main__":
    verify.main(prog_name="hcmigrate verify")
