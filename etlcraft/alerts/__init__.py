"""Alerts: the messages the Engine DB decides to raise (AUD_ALERTS), and the channels that deliver them."""
