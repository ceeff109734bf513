"""The reference Kokoro-82M container for SageMaker AI bidirectional streaming (see CONTRACT.md)."""
