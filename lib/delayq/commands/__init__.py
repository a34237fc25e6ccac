"""One module per script in bin/ (borgmatic's actions): parse, call one verb, report."""
