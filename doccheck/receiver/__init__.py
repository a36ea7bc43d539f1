"""The webhook receiver: verifies, deduplicates and stores deliveries."""
