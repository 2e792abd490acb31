"""Compositional request wordings for the demo tools (training only).

A fixed list of ~20 wordings per tool is learnt by heart by a 2M-parameter model: held-out wordings far from
every template failed. Here each request is put together from parts (an opener, a verb with a noun phrase or
a question frame, a preposition, a tail), which gives thousands of wordings per tool and teaches the model to
key on what is asked rather than on a template. A wording too close to a held-out evaluation wording
(`near_eval`, difflib ratio >= 0.8 on the words) is drawn again, so the evaluation stays on unseen wordings.
"""
import difflib
import re

OPEN_ANY = ["", "", "", "", "hey ", "hey, ", "ok ", "ok, ", "so ", "hi, ", "hello! ", "yo ", "um ", "hmm, ", "alright, ",
            "quick one: ", "question: ", "one thing: ", "real quick, ", "btw ", "oh and ", "Hi there, ", "sorry, ",
            "good morning, ", "hey assistant, "]
OPEN_ASK = ["can you ", "could you ", "would you ", "will you ", "please ", "pls ", "plz ", "can u ",
            "could you please ", "I'd like you to ", "I want you to ", "go ahead and ",
            "try to ", "be a dear and ", "do me a favor and ", "I need you to ", "kindly ", "help me ", "let's "]
TAIL_ANY = ["", "", "", "", "", " please", " pls", " for me", ", thanks", ", thank you", " thx", " if you can",
            " when you get a chance", " now", ", cheers", " :)", " real quick", " asap"]


def _pick(rng, xs):
    return xs[rng.randrange(len(xs))]


PREP_PLACE = ["in", "in", "in", "at", "for", "over in", "around", "out in", "down in", "up in"]
PREP_FOR = ["for", "for", "in", "of", "at"]
WHEN = ["", "", "", " today", " right now", " now", " at the moment", " currently", " rn", " this morning",
        " this afternoon", " tonight", " at present", " just now"]

WEATHER_NP = ["the weather", "the weather", "the forecast", "the current weather", "today's weather", "the conditions",
              "the current conditions", "the temperature", "the temp", "the weather report", "a weather report",
              "the weather situation", "the outlook", "the local weather", "the latest weather", "weather info",
              "the weather forecast", "a forecast", "the weather conditions", "the meteo"]
WEATHER_VERB = ["check", "get", "look up", "fetch", "find", "find out", "tell me", "give me", "show me", "pull up",
                "grab", "report", "share", "send me", "get me", "read me", "bring up", "see", "lookup", "what's"]
WEATHER_Q = ["is it {cond} {p} {city}{w}?", "is it going to {verb_w} {p} {city}{w}?", "will it {verb_w} {p} {city}{w}?",
             "do I need {gear} {p} {city}{w}?", "should I take {gear} to {city}{w}?", "should I pack {gear} for {city}?",
             "will I need {gear} {p} {city}{w}?", "is it {adj} {p} {city}{w}?", "how {adj} is it {p} {city}{w}?",
             "how's the weather {p} {city}{w}?", "what's the weather like {p} {city}{w}?",
             "what's it like outside {p} {city}{w}?", "what are the skies like over {city}{w}?",
             "is {city} {cond}{w}?", "how {adj} is {city}{w}?", "what's the temperature {p} {city}{w}?",
             "is the sun out {p} {city}{w}?", "how many degrees is it {p} {city}{w}?", "is it nice out {p} {city}{w}?",
             "what's the weather doing {p} {city}{w}?", "any rain {p} {city}{w}?", "good weather {p} {city}{w}?",
             "is it {adj} outside {p} {city}{w}?", "what should I wear {p} {city}{w}?", "{city}: weather?",
             "{city} forecast", "{city} weather{w}", "weather check: {city}", "weather, {city}", "{city} - {wnp}?",
             "how's {city} looking weather-wise?", "is the weather good {p} {city}{w}?",
             "what kind of weather is {city} having{w}?", "what's {wnp} {p} {city}?"]
COND = ["sunny", "rainy", "cloudy", "snowy", "foggy", "windy", "stormy", "clear", "wet", "dry", "humid", "raining",
        "snowing", "pouring"]
ADJ_W = ["cold", "hot", "warm", "chilly", "freezing", "sunny", "humid", "windy", "nice", "mild", "cool"]
GEAR = ["an umbrella", "a coat", "a jacket", "sunscreen", "a raincoat", "a sweater", "boots", "gloves", "a hat",
        "sunglasses", "a scarf", "shorts", "a brolly", "warm clothes"]
VERB_W = ["rain", "snow", "be sunny", "be hot", "be cold", "storm", "pour", "clear up"]

TIME_NP = ["the time", "the time", "the local time", "the current time", "the exact time", "the hour", "the clock",
           "what time it is", "the time of day", "the local hour", "the present time", "the current local time"]
TIME_VERB = ["check", "get", "look up", "tell me", "give me", "find", "find out", "show me", "fetch", "report",
             "grab", "get me", "see", "share"]
TIME_Q = ["what time is it {p} {city}{w}?", "what's the time {p} {city}{w}?", "is it {tod} {p} {city}{w}?",
          "how late is it {p} {city}{w}?", "what hour is it {p} {city}{w}?", "is it too late to call {city}{w}?",
          "is it too early to ring someone {p} {city}?", "what's the local time {p} {city}?",
          "what time do they have {p} {city}{w}?", "{city} time{w}?", "time check: {city}", "{city}: time?",
          "what o'clock is it {p} {city}?", "is it {tod} yet {p} {city}?", "are people {doing} {p} {city}{w}?",
          "if I called {city}{w}, what time would it be there?", "what time zone time is it {p} {city}?",
          "how early is it {p} {city}{w}?", "what's the clock {p} {city} showing?", "do they have {tod} {p} {city}{w}?",
          "has the day started {p} {city}?", "current hour {p} {city}?", "{city} - {tnp}?"]
TOD = ["morning", "night", "evening", "afternoon", "late", "early", "midnight", "lunchtime", "daytime", "dark"]
DOING = ["awake", "asleep", "at work", "having lunch", "up"]

CALC_NP = ["{expression}", "{expression}", "{expression}", "the result of {expression}", "the value of {expression}",
           "the answer to {expression}", "what {expression} is", "what {expression} equals", "the sum {expression}",
           "the total of {expression}", "how much {expression} is"]
CALC_VERB = ["calculate", "compute", "evaluate", "work out", "figure out", "solve", "crunch", "do", "tell me",
             "give me", "find", "check", "get", "run", "add up", "math out", "determine", "resolve"]
CALC_Q = ["what's {expression}?", "what is {expression}?", "how much is {expression}?", "{expression} equals?",
          "what does {expression} come out to?", "what's {expression} equal to?", "{expression} = ?", "{expression}=?",
          "any idea what {expression} is?", "what do I get from {expression}?", "what would {expression} be?",
          "{expression} is what?", "math: {expression}", "calc: {expression}", "{expression}",
          "what's the answer to {expression}?", "how much does {expression} make?", "result for {expression}?",
          "what comes out of {expression}?", "is {expression} big? what is it?", "need the value of {expression}"]

CONV_NP = ["{value} {from} in {to}", "{value} {from} to {to}", "{value} {from} into {to}", "{value} {from} as {to}",
           "{value} {from} in terms of {to}", "{value} {from} expressed as {to}", "{value} {from} => {to}",
           "{value} {from} -> {to}", "{value} {from} to {to} units", "{value} of {from} in {to}"]
CONV_VERB = ["convert", "change", "turn", "express", "transform", "switch", "recalculate", "put", "give me",
             "tell me", "show me", "work out", "make", "rewrite", "convert over", "get me"]
CONV_Q = ["how many {to} is {value} {from}?", "how many {to} in {value} {from}?", "how many {to} make {value} {from}?",
          "what's {value} {from} in {to}?", "{value} {from} is how many {to}?", "what is {value} {from} in {to}?",
          "what do {value} {from} come to in {to}?", "if I've got {value} {from}, how many {to} is that?",
          "{value} {from} in {to}?", "{value} {from} → {to}?", "{from} to {to}: {value}", "{value} {from}, in {to}?",
          "what are {value} {from} in {to}?", "{value} {from} equals how many {to}?", "how much is {value} {from} in {to}?",
          "unit conversion: {value} {from} to {to}", "convert: {value} {from} -> {to}", "{value}{from} in {to}?",
          "{value} {from} = ? {to}", "roughly how many {to} is {value} {from}?", "{value} {from} how many {to}?",
          "what's the {to} equivalent of {value} {from}?", "I got {value} {from}, what's that in {to}?"]

NOTE_LEAD = ["note", "note down", "write down", "jot down", "save", "record", "log", "remember", "keep", "store",
             "add a note", "make a note", "take a note", "create a note", "add to my notes", "save a note", "new note",
             "note to self", "memo", "put in my notes", "add this note", "save this", "write this", "jot this",
             "note this", "remember this", "add note", "save note", "quick note", "please note"]
NOTE_SEP = [": ", ": ", " - ", ", ", " ", ": \"{text}\"", " \"{text}\"", " that ", " saying ", " that says ",
            " with the text ", " reading "]
NOTE_Q = ["can I get a note that says {text}?", "note {text}", "{text} - add that to my notes",
          "{text} (save this as a note)", "save \"{text}\" for later", "put \"{text}\" on my list of notes",
          "I need to {text}, note it", "so I don't forget: {text}", "for my notes: {text}", "to my notes: {text}",
          "notes: {text}", "remember for me: {text}", "stash this in my notes - {text}"]

LIST_NP = ["my notes", "my notes", "all my notes", "the notes", "my saved notes", "the notes I saved",
           "everything I noted", "what I wrote down", "my list of notes", "my memos", "all notes", "the saved notes",
           "every note", "the notes list", "my notes so far", "whatever notes I have"]
LIST_VERB = ["show", "list", "read", "display", "give me", "pull up", "open", "check", "fetch", "get", "tell me",
             "read out", "go over", "bring up", "print", "recap", "show me", "read me", "look at"]
LIST_Q = ["what notes do I have?", "what's in my notes?", "do I have notes?", "what did I save?",
          "anything in my notes?", "how many notes do I have?", "what have I written down?", "what's on my notes list?",
          "which notes are saved?", "did I save any notes?", "notes?", "my notes?", "what do my notes say?",
          "have I got any notes?", "what are my saved notes?", "show notes", "any notes saved?", "list them notes"]


def _clause(rng, verb_list, np_list):
    return _pick(rng, verb_list) + " " + _pick(rng, np_list)


def compose(tool_name, rng):
    """A template (with {city}, {expression}, {value}/{from}/{to} or {text}) asking for `tool_name`."""
    r = rng.random()
    if tool_name == "get_weather":
        w = _pick(rng, WHEN)

        def f(s):
            return (s.replace("{cond}", _pick(rng, COND)).replace("{adj}", _pick(rng, ADJ_W))
                    .replace("{gear}", _pick(rng, GEAR)).replace("{verb_w}", _pick(rng, VERB_W))
                    .replace("{p}", _pick(rng, PREP_PLACE)).replace("{w}", w)
                    .replace("{wnp}", _pick(rng, WEATHER_NP)))
        if r < 0.45:
            body = _clause(rng, WEATHER_VERB, WEATHER_NP) + " " + _pick(rng, PREP_FOR + PREP_PLACE) + " {city}" + w
            return _frame(rng, body)
        return _question(rng, f(_pick(rng, WEATHER_Q)))
    if tool_name == "get_time":
        w = _pick(rng, WHEN[:8])

        def f(s):
            return (s.replace("{tod}", _pick(rng, TOD)).replace("{doing}", _pick(rng, DOING))
                    .replace("{p}", _pick(rng, PREP_PLACE)).replace("{w}", w).replace("{tnp}", _pick(rng, TIME_NP)))
        if r < 0.45:
            body = _clause(rng, TIME_VERB, TIME_NP) + " " + _pick(rng, PREP_PLACE + ["for"]) + " {city}" + w
            return _frame(rng, body)
        return _question(rng, f(_pick(rng, TIME_Q)))
    if tool_name == "calculate":
        if r < 0.5:
            return _frame(rng, _clause(rng, CALC_VERB, CALC_NP))
        return _question(rng, _pick(rng, CALC_Q))
    if tool_name == "convert_units":
        if r < 0.5:
            return _frame(rng, _clause(rng, CONV_VERB, CONV_NP))
        return _question(rng, _pick(rng, CONV_Q))
    if tool_name == "add_note":
        if r < 0.7:
            sep = _pick(rng, NOTE_SEP)
            lead = _pick(rng, NOTE_LEAD)
            body = lead + (sep if "{text}" in sep else sep + "{text}")
            return _frame(rng, body, tail=False)
        return _question(rng, _pick(rng, NOTE_Q), tail=False)
    if tool_name == "list_notes":
        if r < 0.5:
            return _frame(rng, _clause(rng, LIST_VERB, LIST_NP))
        return _question(rng, _pick(rng, LIST_Q))
    raise KeyError(tool_name)


def _frame(rng, body, tail=True):
    """An imperative: optional opener, optional 'can you' style lead, body, optional tail and punctuation."""
    lead = _pick(rng, OPEN_ASK) if rng.random() < 0.45 else ""
    text = _pick(rng, OPEN_ANY) + lead + body + (_pick(rng, TAIL_ANY) if tail else "")
    end = "?" if lead.startswith(("can", "could", "would", "will")) else _pick(rng, ["", ".", "", "!"])
    return _cap(rng, text + end)


def _question(rng, q, tail=True):
    t = _pick(rng, TAIL_ANY) if tail and rng.random() < 0.3 else ""
    if t and q.endswith("?"):
        q = q[:-1] + t + "?"
    return _cap(rng, _pick(rng, OPEN_ANY) + q)


def _cap(rng, text):
    return text[0].upper() + text[1:] if text and rng.random() < 0.6 else text


def _words(s):
    return re.findall(r"\{\w+\}|[a-z']+", s.lower())


class EvalGuard:
    """Rejects a wording whose words are too close to one of the held-out evaluation wordings."""

    def __init__(self, eval_asks):
        self.eval = {name: [_words(a) for a in asks] for name, asks in eval_asks.items()}

    def near_eval(self, tool_name, template):
        w = _words(template)
        return any(difflib.SequenceMatcher(None, w, e).ratio() >= 0.8 for e in self.eval.get(tool_name, []))


def training_ask(tool_name, rng, guard):
    for _ in range(50):
        t = compose(tool_name, rng)
        if not guard.near_eval(tool_name, t):
            return t
    raise RuntimeError(f"no wording for {tool_name} passes the evaluation guard")
