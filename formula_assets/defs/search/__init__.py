"""Group `search`: what search answers from — the name and structure indexes of every item,
and the trained models' vectors (`search_index`)."""
