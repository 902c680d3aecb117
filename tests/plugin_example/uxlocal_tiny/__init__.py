"""An example suite plugin: the judge answers yes or no about three sentences."""
