"""Byte-level BPE tokenizer for the Wisp default model, trained on the generated conversations.

    python3 tools/train/train_tokenizer.py        # reads out/train.jsonl, writes out/tokenizer.json

Copy-friendly pre-tokenization: letter runs never carry a leading space (a space before a word is its own
token), every digit is its own token, and punctuation runs may start with one space. So a name or number in
the user's message tokenizes exactly like the same name inside a JSON string in the tool call, and the model
copies token by token instead of having to re-spell words.
Vocabulary: 2048 = 2039 learned byte-level BPE entries (including 256 byte symbols) + 3 special tokens
(<|endoftext|>, <|im_start|>, <|im_end|>) + 6 added plain-text tokens that decode as text
(<tool_call>, </tool_call>, <tool_response>, </tool_response>, <tools>, </tools>).
"""
import json

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

from common import OUT

VOCAB = 2048
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
PLAIN = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<tools>", "</tools>"]
PATTERN = r"\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+|\s+"


def build():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB - len(PLAIN), special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)

    def texts():
        with open(OUT / "train.jsonl") as f:
            for line in f:
                yield json.loads(line)["text"]

    tok.train_from_iterator(texts(), trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in PLAIN])
    assert tok.get_vocab_size() == VOCAB, tok.get_vocab_size()
    for t in SPECIAL + PLAIN:
        assert tok.token_to_id(t) is not None
    tok.save(str(OUT / "tokenizer.json"))
    return tok


if __name__ == "__main__":
    tok = build()
    s = 'What\'s the weather in Zorblatville?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zorblatville"}}\n</tool_call><|im_end|>'
    enc = tok.encode(s)
    print(enc.tokens)
    assert tok.decode(enc.ids, skip_special_tokens=False) == s
    print({t: tok.token_to_id(t) for t in SPECIAL + PLAIN})
