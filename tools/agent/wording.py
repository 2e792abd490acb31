"""How users word their messages: wrappers around a tool's request phrase, context sentences, joins for two
requests, small talk, knowledge questions and system prompts.

Every list comes in two halves, TRAIN and HELD_OUT. The held-out halves were written with the rest of this
file, before any data was generated, and only the evaluation set uses them (see split.py): a figure on them
is a figure on wordings the model never saw.

A wrapper holds `{s}` (the request phrase as written in the tool bank, lower-case start) or `{S}` (the same
with a capital letter).
"""

TRAIN_WRAPPERS = [
    "{s}", "{S}", "{S}.", "{S}?", "{s} please", "{S} please.", "please {s}", "Please {s}.", "can you {s}?",
    "Can you {s}?", "could you {s}?", "Could you {s} for me?", "would you {s}?", "I need you to {s}.",
    "I want to {s}.", "I'd like to {s}.", "hey, {s}", "Hey {s}", "hi! {s}", "ok {s}", "so {s}", "quick one: {s}",
    "{S} thanks", "{S}, thank you.", "{s} pls", "pls {s}", "go ahead and {s}", "help me {s}", "can u {s}",
    "{S} for me?", "let's {s}", "could you please {s}?", "{S} if you can.", "{s} asap", "{S} :)",
    "hello, can you {s}?", "good morning! {S}.", "alright, {s}", "now {s}", "{S} real quick",
    "one thing: {s}", "I was wondering if you could {s}.", "do me a favor and {s}", "try to {s}",
]

HELD_OUT_WRAPPERS = [
    "mind if I ask you to {s}?", "{S}, cheers!", "yo {s}", "I'd love it if you could {s}.", "so... {s}?",
    "when you get a moment, {s}", "be a star and {s}", "{S}. Thanks in advance!", "Would you be able to {s}?",
    "hmm, {s}", "Is it possible to {s}?", "{S} - thx", "Kindly {s}.", "I'm hoping you can {s}.",
    "next: {s}", "Right, {s}.",
]

TRAIN_CONTEXTS = [
    "I'm planning my week.", "My sister is visiting on Friday.", "Work has been crazy today.",
    "I just got back from the gym.", "We're organising a small party.", "I'm on my lunch break.",
    "The meeting ran late again.", "I'm cleaning up my to-do list.", "My boss asked me something.",
    "I'm sitting on the train right now.", "Long day.", "Quick favour before I forget.",
    "I've been meaning to do this all week.", "Sorry for the late message.", "Okay, next thing.",
    "My phone is almost dead.", "We just moved to a new flat.", "I'm helping my dad with something.",
    "It's my first day using this.", "I have ten minutes before my call.",
]

HELD_OUT_CONTEXTS = [
    "The kids are finally asleep.", "I'm sorting things out for the weekend.", "Coffee first, then this.",
    "My flatmate keeps asking about it.", "Before I head out:", "This one is for my manager.",
]

# how two requests are joined in one message; the second phrase keeps its lower-case start
TRAIN_JOINS = [" and ", ", and ", ". Also ", " and then ", "; then ", ". After that, ", ", then ", ". Oh and ",
               "? Also, ", " & ", ", plus ", "\n"]
HELD_OUT_JOINS = [". And while you're at it, ", " - and also ", ". Next, ", ", as well as "]

# system prompts a page might set
TRAIN_SYSTEMS = ["You are a helpful assistant.", "You are Wisp, a helpful assistant running in the browser.",
                 "You are a helpful assistant. Use the tools when they help.", "You are a concise assistant.",
                 "You are the assistant of this website. Answer briefly.", "Be helpful and brief.",
                 "You help users of this app.", "You are a friendly assistant on this page."]
HELD_OUT_SYSTEMS = ["You are this page's assistant.", "Assist the user. Keep answers short."]

# (message, answers): turns that need no tool; None means the answer is built from the tool list
TRAIN_TALK = [
    ("hi", ["Hello! How can I help you?", "Hi! What can I do for you?"]),
    ("hello", ["Hello! How can I help you today?"]), ("hey there", ["Hey! What can I do for you?"]),
    ("good morning", ["Good morning! How can I help?"]),
    ("how are you?", ["I'm doing well, thanks! How can I help you?"]),
    ("thanks!", ["You're welcome!", "Happy to help!"]), ("thank you so much", ["You're welcome!"]),
    ("thanks, that's all", ["You're welcome! Have a good day."]), ("perfect, thanks", ["Glad I could help!"]),
    ("who are you?", ["I'm an assistant that runs in your browser. I can use the tools this page provides."]),
    ("bye", ["Goodbye! Have a nice day."]), ("ok", ["Let me know if you need anything else."]),
    ("cool", ["Glad you like it! Anything else?"]), ("nice to meet you", ["Nice to meet you too! How can I help?"]),
    ("good night", ["Good night! Sleep well."]), ("sorry", ["No problem at all!"]),
    ("are you a robot?", ["I'm an AI assistant, a small language model running in your browser."]),
    ("you're great", ["Thank you! Happy to help."]), ("what can you do?", None), ("help", None),
    ("What tools do you have?", None),
]
HELD_OUT_TALK = [
    ("hiya!", None), ("good evening", None), ("how's it going?", None), ("many thanks", None),
    ("see you later", None), ("what's up?", None), ("great job", None), ("lol", None), ("howdy", None),
    ("cheers, that helped", None),
]

# knowledge the base model has: answered without a tool
TRAIN_KNOWLEDGE = [
    ("what is the capital of France?", "The capital of France is Paris."),
    ("how many days are in a week?", "There are 7 days in a week."),
    ("what color is the sky on a clear day?", "It's blue."),
    ("how many hours are in a day?", "A day has 24 hours."),
    ("say hello in Spanish", "Hola!"),
    ("what is the largest ocean?", "The Pacific Ocean is the largest ocean."),
    ("how many legs does a spider have?", "A spider has eight legs."),
    ("what's the opposite of hot?", "The opposite of hot is cold."),
    ("who wrote Romeo and Juliet?", "William Shakespeare wrote Romeo and Juliet."),
    ("what is the boiling point of water in celsius?", "Water boils at 100 degrees Celsius at sea level."),
    ("how many continents are there?", "There are seven continents."),
    ("what planet do we live on?", "We live on Earth."),
    ("what's the plural of mouse?", "The plural of mouse is mice."),
    ("how many minutes are in an hour?", "An hour has 60 minutes."),
]
HELD_OUT_KNOWLEDGE = [
    ("what is the capital of Japan?", "Tokyo"), ("how many months are in a year?", "12"),
    ("what is the freezing point of water in celsius?", "0"), ("how many sides does a triangle have?", "3"),
]

# the reply when nothing on the page can do what was asked ({cap}: the request phrase)
DECLINES = [
    "Sorry, I can't do that here: none of this page's tools can {cap}.",
    "I don't have a tool to {cap}. I can only use: {names}.",
    "Sorry, I'm not able to {cap} with the tools available here.",
    "Unfortunately I can't {cap}; there is no tool for that on this page.",
]

ERROR_ANSWERS = [
    "Sorry, that didn't work: {err}.", "The tool reported an error: {err}.",
    "I couldn't do that because of an error ({err}).", "Sorry, something went wrong: {err}.",
]
