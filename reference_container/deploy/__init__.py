"""Deploy the reference container to a SageMaker bidirectional-streaming endpoint and take it down.

`python -m reference_container.deploy up|down`: plain boto3, no CDK. Import-light on purpose: nothing
here imports torch or kokoro, and boto3 is imported only when a command talks to AWS.
"""
