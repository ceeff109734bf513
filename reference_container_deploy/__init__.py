"""Deploy the reference container to a SageMaker bidirectional-streaming endpoint and take it down.

`python -m reference_container.deploy up|down` (the pinned command; ``reference_container/deploy/`` only
forwards here): plain boto3, no CDK. A package beside the container's runtime, not inside it: it imports
nothing of the runtime (only ``bidi_tts.protocol``), and the runtime image does not carry it.
Import-light on purpose: nothing here imports torch or kokoro, and boto3 is imported only when a command
talks to AWS.
"""
