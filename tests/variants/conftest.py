"""The session's trained models (tests/api/conftest.py), and a classifier that must read the element.

``promoter_export`` learns from ``planted_sequences``, whose DeePromoter negatives are substituted
with uniform bases (50% GC) in a 39%-GC background: base composition alone separates most of them,
so that classifier barely reads the element. ``element_classifier`` sees positives and negatives
drawn from one background, the element being the only difference between the classes.
"""

import numpy as np
import pytest

from bigbird_dna.demo.synthetic_promoters import plant
from tests.api.conftest import PROMOTER_BP, mlm_export, promoter_export  # noqa: F401  (fixtures)
from tests.conftest import compose
from tests.promoter.conftest import PROMOTER_FAST

TSS_INDEX = 200  # the element sits at [165, 194) of a positive


def _background(length: int, rng: np.random.Generator) -> str:
    return "".join(rng.choice(list("ACGT"), length, p=[0.305, 0.195, 0.195, 0.305]))  # 39% GC


@pytest.fixture(scope="session")
def element_classifier(tmp_path_factory):
    """Export of a promoter classifier trained on 200 planted positives against 200 element-free
    backgrounds (validation AUROC >= 0.99)."""
    from bigbird_dna.train import run

    folder = tmp_path_factory.mktemp("element")
    rng = np.random.default_rng(1)
    rows = [(plant(_background(PROMOTER_BP, rng), TSS_INDEX), 1) if i % 2 == 0 else (_background(PROMOTER_BP, rng), 0)
            for i in range(400)]
    table = folder / "element.tsv"
    table.write_text("sequence\tlabel\n" + "".join(f"{s}\t{y}\n" for s, y in rows))
    overrides = [*PROMOTER_FAST, "task=promoter", "data=promoter_labelled", f"data.train={table}",
                 "data.val_fraction=0.25", "data.batch_size=16", "trainer.max_steps=150",
                 "trainer.val_check_interval=75", "trainer.check_val_every_n_epoch=null",
                 f"task.predict_window_bp={PROMOTER_BP}",
                 # attention-only layers: with the tiny default's convolutions this classifier also
                 # reached AUROC >= 0.99 but leaned on composition (destroying the element moved its
                 # score by -0.026), and these tests need one that reads the element
                 # the plain encoder and head these deltas were calibrated on (not the hybrid default)
                 "model=tiny", "optim=adamw", "task.head.pooling=cls", "model.conv_kernel=0"]
    summary = run(compose(overrides, folder / "run"))
    assert summary["val/auroc"] >= 0.99, summary
    return folder / "run" / "export"
