"""Prints `step=S loss=L lr=5e-05` for STEPS steps, INTERVAL seconds apart, and reports each
step's progress to the job's runtime status endpoint when it has one (the variables trainctl
run gives a trainer), with the standard library only, as a training script without the SDK
would. Usage: curve_with_progress.py [STEPS] [INTERVAL]"""

import json
import os
import ssl
import sys
import time
import urllib.request
from datetime import datetime, timezone

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
interval = float(sys.argv[2]) if len(sys.argv) > 2 else 0.4
url = os.environ.get("KUBEFLOW_TRAINER_SERVER_URL")
context = ssl.create_default_context(cafile=os.environ.get("KUBEFLOW_TRAINER_SERVER_CA_CERT"))


def report(step, loss):
    token = open(os.environ["KUBEFLOW_TRAINER_SERVER_TOKEN"]).read().strip()
    body = {"trainerStatus": {
        "progressPercentage": 100 * step // steps,
        "estimatedRemainingSeconds": int((steps - step) * interval),
        "metrics": [{"name": "loss", "value": f"{loss:.4f}"}],
        "lastUpdatedTime": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}}
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, context=context, timeout=5):
        pass


for s in range(1, steps + 1):
    loss = 2.0 / s
    print(f"step={s} loss={loss:.4f} lr=5e-05", flush=True)
    if url:
        report(s, loss)
    time.sleep(interval)
