"""Search queries for the methods' tests: a formula as one row of an `opt_graphs` table, and a
text (the two sides a bag-reading method encodes)."""

import pyarrow as pa


class GraphQuery:
    def __init__(self, graphs: pa.Table, row: int) -> None:
        self._graphs, self.row = graphs, row

    def graphs(self) -> pa.Table:
        return self._graphs.slice(self.row, 1)


class TextQuery:
    def __init__(self, text: str) -> None:
        self.text = text
