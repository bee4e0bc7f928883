"""Host TCP endpoints: a sans-IO TCP core, congestion-control schemes, and the
two drivers that run them (real network in namespaces, deterministic simulator)."""
