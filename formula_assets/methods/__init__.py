"""Stage `methods`: the methods Table 2 compares, one module each behind one interface
(`base.Method`: train, encode both sides, settings), and the registry that the fold × method
partitions, Table 2, the score ensemble and search read (`registry`)."""
