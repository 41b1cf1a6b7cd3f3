"""Recall and precision of `lite_guard check --no-project` on the round-10 held-out set.

The labels and the sources are in bench/results/heldout_round10.json (docs/lint-recall.md,
"Round 10", says how they were written): five third-party snapshots no earlier round used
(ColossalAI, nncf, neural-compressor, brevitas, hidet as a control), read from bare git mirrors
(``--mirrors``, ``owner+name/repo`` as the workspace's ``fetch`` tool lays them out). Nothing
fetched is imported or run. Scored as round 9's set is (bench/recall_heldout_round9.py).

    python bench/recall_heldout_round10.py                  # measure this checkout
    python bench/recall_heldout_round10.py --src /tmp/old   # measure another checkout's lint
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recall_heldout_round9 import REPO, main  # noqa: E402

LABELS = REPO / "bench" / "results" / "heldout_round10.json"

if __name__ == "__main__":
    sys.exit(main(LABELS, Path("/tmp/heldout_round10_trees"), __doc__))
