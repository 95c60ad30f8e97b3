"""The vault: key-safe codes, door codes, alarm PINs, Wi-Fi; masked, revealed with an audit row."""
