"""One-off measurements: bidirectional against batch, the cost of a transport, the generator's accuracy,
and the known-latency server they measure against."""
