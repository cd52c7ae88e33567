"""Run every benchmark: `python -m benchmarks` (or `make bench`)."""

from benchmarks import embedding, parse, table1


def main() -> None:
    parse.run()
    embedding.run()
    table1.run()


if __name__ == "__main__":
    main()
