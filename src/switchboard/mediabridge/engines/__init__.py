"""AI engines behind one interface (``base``): the offline engine and the Gemini Live adapter."""
