"""Build a tiny LLaVA-style VLM from a config at test time (DEPENDENCIES.md §4): a byte-level
BPE tokenizer trained in-process, a 2-layer CLIP vision tower and a 2-layer Llama."""

from __future__ import annotations

from pathlib import Path

CHAT = (
    "{% for m in messages %}{{ m['role'] }}: {% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for c in m['content'] %}{% if c['type'] == 'image' %}<image>"
    "{% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)


def build_tiny_llava(out: Path) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    torch.manual_seed(0)
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=512,
        special_tokens=["<unk>", "<pad>", "<s>", "</s>", "<image>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    corpus = [
        '{"label": "cat", "count": 2}',
        "What is in the image? Answer with JSON.",
        "user: assistant: system:",
    ] * 20
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        extra_special_tokens={"image_token": "<image>"},
    )
    ip = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    proc = LlavaProcessor(
        image_processor=ip,
        tokenizer=fast,
        patch_size=8,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=CHAT,
    )
    cfg = LlavaConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            image_size=32,
            patch_size=8,
            projection_dim=32,
        ),
        text_config=LlamaConfig(
            vocab_size=len(fast),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            pad_token_id=1,
            bos_token_id=2,
            eos_token_id=3,
        ),
        image_token_index=fast.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    model = LlavaForConditionalGeneration(cfg)
    model.generation_config.pad_token_id = 1
    model.generation_config.eos_token_id = 3
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    proc.save_pretrained(out)
    return out
