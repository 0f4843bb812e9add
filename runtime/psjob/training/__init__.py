"""psjob's built-in training job: what `psjob pserver` and `psjob worker` run.

A ParameterServerJob without `spec.command` runs this job in every pod (and
every `psjob run` process): the CTR model of psjob.training.models.ctr trained with
Fleet over the job's pservers, on synthetic click data or a directory of CTR
text files. The arguments (`spec.args`) are the same for every process —
see `options.py` — and everything else (role, endpoints, trainer id, mode,
checkpoint directory, metrics port) comes from the role environment.

Modules: options (arguments), data (each trainer's share), job (pserver and
trainer flows, checkpoints and resuming through psjob.cluster.trainer.checkpointer),
stream (a job on a stream of folders, `spec.data.stream`: publication, freshness).
The trainer's progress lines (psjob.foundation.progress) and metrics (psjob.cluster.trainer.telemetry)
are shared with a Fleet script's trainer, which reports the same way.
"""
from psjob.training.options import TrainOptions, UsageError, parse
