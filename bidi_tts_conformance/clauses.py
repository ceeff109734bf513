"""What each contract clause a case cites says, in a sentence or two (the report links ids to these).

Condensed from the project's contract (the SageMaker AI container contract for bidirectional
streaming, and the TTS protocol of docs/guarantees.md); a test checks every clause a case cites is here.
"""

from __future__ import annotations

SAGEMAKER_DOC = ("https://docs.aws.amazon.com/sagemaker/latest/dg/"
                 "realtime-endpoints-bidirectional-streaming.html")

CLAUSES: dict[str, str] = {
    # Platform clauses (SageMaker)
    "SM-LABEL": "The image declares LABEL com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true.",
    "SM-PORT": "HTTP and WebSocket on port 8080.",
    "SM-PING": "GET /ping answers 200 once the model is loaded (within 2 s per call), 503 before that; the "
               "container must pass it within 8 minutes of start.",
    "SM-WS-PATH": "The WebSocket route is /invocations-bidirectional-stream; a client may pick another path with "
                  "X-Amzn-SageMaker-Model-Invocation-Path and add a query with X-Amzn-SageMaker-Model-Query-String; "
                  "the container serves its route at the default path.",
    "SM-ACCEPT": "The container accepts a WebSocket connection within 250 ms.",
    "SM-FRAMES-IN": "Each client PayloadPart becomes exactly one WebSocket data frame: TEXT when DataType=UTF8, "
                    "otherwise BINARY; PARTIAL parts ending in COMPLETE arrive as one fragmented message. Clients "
                    "built on the sample never set DataType, so every message reaches the container as BINARY.",
    "SM-FRAMES-OUT": "A TEXT frame from the container reaches the client as DataType=UTF8, a BINARY frame as "
                     "DataType=BINARY.",
    "SM-PINGPONG": "SageMaker pings every 60 s and closes after 5 unanswered pings; the container answers pings.",
    "SM-CLOSE": "A close frame from the container reaches the client as a ModelStreamError carrying the close "
                "code and reason.",
    "SM-STOP": "SageMaker stops a container with SIGTERM, then SIGKILL 30 s later: the container exits within "
               "that grace period (docs/sagemaker.md, Stop); work whose client has gone is not kept running.",
    "POST-INVOCATIONS": "POST /invocations synthesizes one complete input and streams the response (pcm, or wav "
                        "with 0xFFFFFFFF size fields); bad input gets 400/413/503 with a JSON {code, message}.",
    # TTS clauses (this protocol)
    "TTS-AUDIO": "Audio travels only as BINARY frames of raw s16le PCM, each a whole number of samples (an even "
                 "number of bytes), never inside JSON or base64; loud audio is clipped at full scale, never wrapped "
                 "around to the opposite sign.",
    "TTS-VOICE": "A voice outside the allow-list (a path, '..', a NUL, an overlong id, free text) is refused with "
                 "unknown_voice; a client's voice never reaches a file path, the model's input or what is spoken.",
    "TTS-BINARY-IN": "A message in a BINARY frame is handled exactly like the same message in a TEXT frame.",
    "TTS-ORDER": "For each message: synthesis_start, then one or more audio frames, then synthesis_complete; "
                 "nothing of the next message before that.",
    "TTS-STREAM": "Audio is sent as it is synthesized: the first audio frame of a multi-sentence message leaves "
                  "before the last sentence is synthesized.",
    "TTS-SESSION": "After synthesis_complete the session stays open and takes the next message; only "
                   "{\"type\": \"close\"}, a client close, or a fatal error ends it.",
    "TTS-CLOSE": "On {\"type\": \"close\"} the container closes with code 1000 after finishing the current message.",
    "TTS-ERROR": "Bad input gets an error frame with a stable code; the session stays usable unless the error is "
                 "fatal, and then it closes with 1007 (bad UTF-8), 1009 (too big) or 1011 (internal).",
    "TTS-ISOLATION": "One session's bad input, slowness or disconnect never breaks another session, and /ping "
                     "stays healthy.",
    "TTS-CLASSIFY": "A client tells control from audio by DataType or frame opcode when it has them, else by the "
                    "rule: a frame that decodes whole as a UTF-8 JSON object is control, anything else is audio "
                    "(PCM may start with '{').",
}


def clause_text(clause: str) -> str:
    """The clause's summary, or a plain note for an id this table does not know."""
    return CLAUSES.get(clause, f"{clause}: no summary recorded for this clause")
