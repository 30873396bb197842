"""An export fine-tunes with the HF ``Trainer`` (labels -> loss by ``problem_type``) and with a
PEFT LoRA adapter on the fused attention projection (``qkv``)."""

from __future__ import annotations

import pytest
import torch

from tests.hf.conftest import windows

transformers = pytest.importorskip("transformers")


def _dataset(tokenizer, count: int = 12) -> list[dict]:
    seqs = windows(count, 300)
    return [{**tokenizer(seq), "labels": i % 3} for i, seq in enumerate(seqs)]


def _arguments(tmp_path, steps: int = 3) -> "transformers.TrainingArguments":
    return transformers.TrainingArguments(output_dir=str(tmp_path / "trainer"), max_steps=steps,
                                          per_device_train_batch_size=4, learning_rate=1e-3, logging_steps=1,
                                          save_strategy="no", report_to=[], use_cpu=True, seed=0,
                                          dataloader_num_workers=0)


def test_trainer_fine_tunes_a_classifier_for_three_steps(hf_exports, tmp_path):
    path = hf_exports["classify"]
    model = transformers.AutoModelForSequenceClassification.from_pretrained(path, trust_remote_code=True)
    tokenizer = transformers.AutoTokenizer.from_pretrained(path, trust_remote_code=True)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    trainer = transformers.Trainer(model=model, args=_arguments(tmp_path), train_dataset=_dataset(tokenizer),
                                   data_collator=transformers.DataCollatorWithPadding(tokenizer))
    result = trainer.train()
    assert trainer.state.global_step == 3
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert len(losses) == 3 and all(torch.isfinite(torch.tensor(losses)))
    assert torch.isfinite(torch.tensor(result.training_loss))
    changed = [k for k, v in model.state_dict().items() if not torch.equal(v, before[k])]
    assert "head.out.weight" in changed and any(k.endswith("attn.qkv.weight") for k in changed)


def test_lora_trains_the_adapters_and_leaves_the_base_weights(hf_exports, tmp_path):
    peft = pytest.importorskip("peft")
    path = hf_exports["classify"]
    model = transformers.AutoModelForSequenceClassification.from_pretrained(path, trust_remote_code=True)
    tokenizer = transformers.AutoTokenizer.from_pretrained(path, trust_remote_code=True)
    lora = peft.get_peft_model(model, peft.LoraConfig(r=4, lora_alpha=8, target_modules=["qkv"],
                                                      modules_to_save=["head"]))
    adapters = {k: v.clone() for k, v in lora.named_parameters() if "lora_" in k}
    frozen = {k: v.clone() for k, v in lora.named_parameters() if not v.requires_grad}
    assert len(adapters) == 2 * model.config.num_hidden_layers  # A and B of each layer's qkv
    assert all(k.endswith(("lora_A.default.weight", "lora_B.default.weight")) for k in adapters)
    assert any("attn.qkv.base_layer.weight" in k for k in frozen)
    trainer = transformers.Trainer(model=lora, args=_arguments(tmp_path), train_dataset=_dataset(tokenizer),
                                   data_collator=transformers.DataCollatorWithPadding(tokenizer))
    trainer.train()
    after = dict(lora.named_parameters())
    lora_b = [k for k in adapters if "lora_B" in k]
    assert all(not torch.equal(after[k], adapters[k]) for k in lora_b), "every B matrix moved off zero"
    assert all(torch.equal(after[k], v) for k, v in frozen.items()), "the base weights are frozen"
