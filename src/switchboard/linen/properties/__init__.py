"""Holiday-rental properties: where linen is delivered, with their par levels."""
