"""Stand-ins that let the AWS sample's four containers run here, their protocol code unchanged.

Each serves one model call the sample makes (kokoro-onnx, kokoro's KPipeline, Chatterbox Turbo,
vLLM's OpenAI server with SNAC) locally through this project's Kokoro-82M. `modules/` holds
importable stand-ins for packages the sample imports and this machine lacks; it is appended to
`sys.path`, so an installed real package always wins. What each container gets is in `describe`.
"""
