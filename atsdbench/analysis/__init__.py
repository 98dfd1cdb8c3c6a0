"""Statistics over results: stats, time series, compare, model. Pure: never imports measure."""
