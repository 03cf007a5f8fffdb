// Filled in by the datasets work.
