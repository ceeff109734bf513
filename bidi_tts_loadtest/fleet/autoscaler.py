"""The simulated autoscaler of a plan's :class:`~bidi_tts.fleet_plan.Policy`: target tracking on
ConcurrentRequestsPerModel to scale out, a step policy to scale in.

An approximation of Application Auto Scaling's behaviour, not its code. What it follows:
- target tracking "creates and manages the CloudWatch alarms that invoke the scaling policy"
  (AWS, "How target tracking scaling for Application Auto Scaling works"); the alarms' shape is not
  in the docs we could cite. For a high-resolution metric (SageMaker's ConcurrentRequestsPerModel,
  10 s) we take the scale-out alarm to fire on ``alarm_points`` (3) consecutive 10 s datapoints above
  the target, the shape the issue states; it is an option, so a different shape can be tried;
- the new capacity is proportional: ceil(current x metric / target), never above the maximum;
- no scale-out within the scale-out cooldown of the last one, and none while instances are still
  starting: one scaling activity at a time. UpdateEndpointWeightsAndCapacities "sets the endpoint
  status to Updating. After updating the endpoint, it sets the status to InService" (SageMaker API
  reference); that a second capacity update is not taken while the endpoint is Updating, and that
  Application Auto Scaling starts no new scale-out while one is in progress, is our assumption (we
  found no page that says either way), so the simulation never overlaps scale-outs;
- scale-in is disabled in the target-tracking policy (``DisableScaleIn``); a step policy removes one
  instance when its alarm (the metric's Average over ``scale_in_period_s`` below ``scale_in_value``
  for ``scale_in_periods`` periods) is in alarm, not within the scale-in cooldown, never below the
  minimum, and not while instances are starting (SageMaker takes no capacity change while an
  endpoint is Updating).
The metric is the fleet's concurrent requests (a session counts one) over the instances in service,
sampled every ``sample_s``; a datapoint is the Maximum (the sample's choice) or the Average of a
period's samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from bidi_tts.fleet_plan import Policy


@dataclass(slots=True)
class Decision:
    add: int = 0      # instances to start now
    remove: int = 0   # instances to drain now


@dataclass(slots=True)
class Autoscaler:
    policy: Policy
    datapoints: list[tuple[float, float]] = field(default_factory=list)  # (end of period, value)
    _samples: list[float] = field(default_factory=list)
    _low_samples: list[float] = field(default_factory=list)
    _period_end: float = 0.0
    _low_end: float = 0.0
    _breaches: int = 0
    _lows: int = 0
    last_out: float = -math.inf
    last_in: float = -math.inf

    def __post_init__(self) -> None:
        self._period_end = self.policy.period_s
        self._low_end = self.policy.scale_in_period_s

    def observe(self, t: float, metric: float, in_service: int, starting: int) -> Decision:
        """One sample of the metric at time t; acts at the end of each period."""
        p = self.policy
        decision = Decision()
        self._samples.append(metric)
        self._low_samples.append(metric)
        if t + 1e-9 >= self._period_end:
            value = max(self._samples) if p.statistic == "Maximum" else sum(self._samples) / len(self._samples)
            self._samples.clear()
            self._period_end += p.period_s
            self.datapoints.append((t, value))
            self._breaches = self._breaches + 1 if value > p.target_value else 0
            if (self._breaches >= p.alarm_points and t - self.last_out >= p.scale_out_cooldown_s
                    and starting == 0):
                desired = min(p.max_instances, math.ceil(in_service * value / p.target_value - 1e-9))
                decision.add = max(0, desired - in_service)
                if decision.add:
                    self.last_out = t
        if t + 1e-9 >= self._low_end:
            mean = sum(self._low_samples) / len(self._low_samples)
            self._low_samples.clear()
            self._low_end += p.scale_in_period_s
            self._lows = self._lows + 1 if mean < p.scale_in_value else 0
            if (self._lows >= p.scale_in_periods and t - self.last_in >= p.scale_in_cooldown_s
                    and starting == 0 and decision.add == 0 and in_service > p.min_instances):
                decision.remove = 1
                self.last_in = t
        return decision
