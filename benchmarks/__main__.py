"""Run every benchmark: `python -m benchmarks` (or `make bench`)."""

from benchmarks import parse


def main() -> None:
    parse.run()


if __name__ == "__main__":
    main()
