"""Synthetic tool-calling conversations for the Wisp default model.

    python3 tools/train/gen_data.py --train 60000 --seed 1

Writes tools/train/out/train.jsonl (one {"messages", "tools", "text"} per line; "text" is the conversation
rendered through chat_template.jinja) and tools/train/out/eval.jsonl (held-out evaluation cases).

Held out from training (used only by the evaluation cases): a fifth of the real city names, a few units, the
EVAL_* phrasings of the demo tools, the HELD_OUT tools, fresh random made-up names and fresh procedural tools.

    python3 tools/train/gen_data.py --train 40000 --seed 3 --copy 0.85 --focus --name copyA

adds copy-dense conversations (CopyBuilder) to a further training file and keeps the existing eval.jsonl.
"""
import argparse
import json
import random
import re
import string

from common import OUT, cjson, render
from phrasing import EvalGuard, training_ask

# ----------------------------------------------------------------------------------------------------------
# entities

REAL_CITIES = """Paris London Berlin Madrid Rome Lisbon Vienna Prague Warsaw Budapest Athens Dublin Oslo Stockholm
Helsinki Copenhagen Amsterdam Brussels Zurich Geneva Munich Hamburg Milan Naples Barcelona Seville Valencia Porto
Lyon Marseille Nice Toulouse Bordeaux Krakow Gdansk Riga Vilnius Tallinn Reykjavik Edinburgh Glasgow Manchester
Liverpool Bristol Leeds Cardiff Belfast Cork Tokyo Osaka Kyoto Seoul Busan Beijing Shanghai Shenzhen Hong_Kong
Taipei Singapore Bangkok Hanoi Manila Jakarta Mumbai Delhi Bangalore Chennai Kolkata Karachi Lahore Dhaka Kathmandu
Colombo Dubai Doha Riyadh Tehran Istanbul Ankara Cairo Nairobi Lagos Accra Dakar Casablanca Tunis Algiers
Johannesburg Cape_Town Durban Addis_Ababa Kampala Kigali Lusaka Harare Luanda Kinshasa New_York Los_Angeles Chicago
Houston Phoenix Philadelphia San_Antonio San_Diego Dallas Austin Seattle Denver Boston Miami Atlanta Detroit
Portland Las_Vegas Nashville Memphis Baltimore Toronto Montreal Vancouver Calgary Ottawa Quebec Winnipeg
Mexico_City Guadalajara Monterrey Havana Bogota Medellin Lima Quito Santiago Buenos_Aires Montevideo Asuncion
La_Paz Caracas Sao_Paulo Rio_de_Janeiro Brasilia Salvador Recife Sydney Melbourne Brisbane Perth Adelaide Auckland
Wellington Christchurch Honolulu Anchorage Fairbanks Marrakesh Fez Alexandria Luxor Beirut Amman Jerusalem Baku
Tbilisi Yerevan Almaty Tashkent Bishkek Ulaanbaatar Vladivostok Novosibirsk Kazan Kyiv Lviv Odesa Minsk Chisinau
Bucharest Sofia Belgrade Zagreb Ljubljana Sarajevo Skopje Tirana Valletta Nicosia Luxembourg Monaco Andorra
Bratislava Salzburg Innsbruck Graz Basel Bern Lausanne Turin Florence Venice Bologna Verona Palermo Bilbao Malaga
Granada Cologne Frankfurt Stuttgart Dresden Leipzig Nuremberg Hanover Bremen Antwerp Ghent Bruges Rotterdam
Utrecht Eindhoven Aarhus Bergen Trondheim Gothenburg Malmo Uppsala Tampere Turku Oulu""".split()
REAL_CITIES = [c.replace("_", " ") for c in REAL_CITIES]

FIRST = """Anna Ben Carla David Emma Felix Grace Hugo Ines Jack Kira Liam Mia Noah Olga Pablo Quinn Rosa Sam Tara
Umar Vera Will Xena Yusuf Zoe Aiko Bjorn Chen Dmitri Elif Fatima Goran Hana Ivan Jun Kofi Lena Marco Nadia Omar
Priya Ravi Sofia Tomas Ulla Vikram Wen Yara Zainab Alex Maria John Sarah Peter Laura Mateo Lucia Arjun Mei""".split()
LAST = """Smith Garcia Muller Rossi Novak Kowalski Tanaka Kim Chen Patel Okafor Silva Dubois Jensen Larsen Ivanova
Nguyen Haddad Costa Schmidt Brown Lopez Weber Moreau Berg Sato Park Singh Mensah Santos""".split()

PRODUCTS = """laptop phone headphones keyboard monitor chair desk lamp backpack bottle camera tablet printer router
speaker watch charger mouse blender kettle toaster jacket sneakers umbrella notebook pen guitar bicycle tent""".split()

WORDS = """apple river stone cloud garden paper silver orange window forest candle mirror rocket pencil tiger ocean
planet coffee bridge violet harbor meadow thunder cotton marble falcon lantern pepper cedar willow copper maple
shadow crystal ember velvet orbit comet glacier canyon prairie island summit valley breeze""".split()

SYL_A = "b c d f g h j k l m n p r s t v w z br cr dr fl gr kl pr st tr sk sn th ch sh qu x y".split()
SYL_V = "a e i o u ae ai ea ee io ou oo y".split()
SYL_E = "n r l s th x k m nd rk st ll sh v z rn lt".split()


def made_up(rng, syl=None):
    n = syl or rng.choice([2, 2, 3, 3, 4])
    w = ""
    for i in range(n):
        w += rng.choice(SYL_A) + rng.choice(SYL_V)
        if rng.random() < 0.3:
            w += rng.choice(SYL_E)
    return w


def made_up_place(rng):
    w = made_up(rng).capitalize()
    r = rng.random()
    if r < 0.12:
        return rng.choice(["Port", "San", "New", "Lake", "Mount", "Upper", "Fort", "El", "Saint"]) + " " + w
    if r < 0.2:
        return w + " " + rng.choice(["City", "Falls", "Bay", "Springs", "Harbor", "Creek", "Heights"])
    if r < 0.25:
        return w + "-" + made_up(rng, 1).capitalize()
    if r < 0.28:
        return w + " " + str(rng.randint(2, 99))
    return w


UNITS = [("km", "miles"), ("miles", "km"), ("kilometers", "miles"), ("meters", "feet"), ("feet", "meters"),
         ("m", "ft"), ("cm", "inches"), ("inches", "cm"), ("kg", "lb"), ("lb", "kg"), ("pounds", "kilograms"),
         ("kilograms", "pounds"), ("g", "oz"), ("oz", "g"), ("celsius", "fahrenheit"), ("fahrenheit", "celsius"),
         ("C", "F"), ("F", "C"), ("liters", "gallons"), ("gallons", "liters"), ("ml", "cups"), ("mph", "km/h"),
         ("km/h", "mph"), ("hours", "minutes"), ("minutes", "seconds"), ("days", "hours"), ("mm", "inches"),
         ("tons", "kg"), ("acres", "hectares"), ("hectares", "acres"), ("MB", "GB"), ("GB", "MB"), ("bytes", "KB"),
         ("kelvin", "celsius"), ("weeks", "days"), ("cups", "ml"), ("pints", "liters"), ("m/s", "km/h")]
EVAL_UNITS = [("yards", "meters"), ("stone", "kg"), ("nautical miles", "km"), ("teaspoons", "ml"),
              ("decades", "years"), ("furlongs", "meters")]

CONDITIONS = ["sunny", "cloudy", "rainy", "snowy", "foggy", "windy", "partly cloudy", "clear", "stormy", "drizzle",
              "overcast", "hail"]
TZ = ["CET", "GMT", "EST", "PST", "JST", "IST", "UTC", "CST", "AEST", "EET", "BRT", "MSK", "UTC+3", "UTC-4"]

NOTE_STARTS = ["buy", "call", "email", "pick up", "book", "pay", "return", "clean", "fix", "water", "order", "send",
               "check", "finish", "cancel", "renew", "print", "bring", "feed", "visit"]


def note_text(rng):
    r = rng.random()
    if r < 0.3:
        return f"{rng.choice(NOTE_STARTS)} {rng.choice(WORDS + PRODUCTS)}"
    if r < 0.5:
        return f"{rng.choice(NOTE_STARTS)} {rng.choice(FIRST)} {rng.choice(['tomorrow', 'on Monday', 'at 5pm', 'tonight', 'next week', 'before Friday'])}"
    if r < 0.65:
        return f"{rng.choice(NOTE_STARTS)} the {made_up(rng)} {rng.choice(WORDS)}"
    if r < 0.8:
        return " ".join(rng.choice(WORDS + PRODUCTS + NOTE_STARTS) for _ in range(rng.randint(2, 5)))
    if r < 0.9:
        return f"meeting with {rng.choice(FIRST)} {rng.choice(LAST)} at {rng.randint(1, 12)}:{rng.choice(['00', '15', '30', '45'])}"
    return f"{made_up(rng)} code {rng.randint(100, 99999)}"


def number(rng, decimals=0.3):
    if rng.random() < decimals:
        v = round(rng.uniform(0.1, 999), rng.choice([1, 1, 2]))
        return v if v != int(v) else int(v)
    return rng.choice([rng.randint(1, 20), rng.randint(1, 200), rng.randint(1, 5000)])


def expression(rng):
    n = lambda: str(number(rng, 0.2))
    ops = ["+", "-", "*", "/"]
    r = rng.random()
    if r < 0.45:
        return f"{n()} {rng.choice(ops)} {n()}"
    if r < 0.6:
        return f"({n()} {rng.choice(ops)} {n()}) {rng.choice(ops)} {n()}"
    if r < 0.7:
        return f"{n()} {rng.choice(ops)} {n()} {rng.choice(ops)} {n()}"
    if r < 0.78:
        return f"{rng.randint(2, 12)}^{rng.randint(2, 10)}"
    if r < 0.86:
        return f"sqrt({rng.randint(2, 10000)})"
    if r < 0.93:
        return f"{n()}*{n()}"
    return f"{n()}/{n()}+{n()}"


def calc_result(rng):
    v = rng.choice([rng.randint(-500, 100000), round(rng.uniform(0, 5000), rng.randint(1, 4))])
    return v


# ----------------------------------------------------------------------------------------------------------
# value generators for the tool catalogue (ctx carries the entity pools of the split)

def gen_value(kind, rng, ctx):
    if kind == "city":
        return ctx.city()
    if kind == "person":
        return ctx.person()
    if kind == "word":
        return rng.choice([made_up(rng), rng.choice(WORDS), made_up(rng).capitalize()])
    if kind == "product":
        return rng.choice([rng.choice(PRODUCTS), f"{made_up(rng).capitalize()} {rng.choice(PRODUCTS)}",
                           f"{made_up(rng).capitalize()} {rng.randint(2, 900)}"])
    if kind == "code":
        return rng.choice([
            "".join(rng.choice(string.ascii_uppercase) for _ in range(rng.randint(2, 3))) + "-" + str(rng.randint(10, 99999)),
            "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(rng.randint(5, 9))),
            str(rng.randint(1000, 9999999))])
    if kind == "ticker":
        return "".join(rng.choice(string.ascii_uppercase) for _ in range(rng.randint(2, 4)))
    if kind == "email":
        return f"{ctx.person().split()[0].lower()}@{rng.choice([made_up(rng), 'mail', 'example', 'work'])}.{rng.choice(['com', 'org', 'net', 'io'])}"
    if kind == "text":
        return note_text(rng)
    if kind == "query":
        return rng.choice([note_text(rng), f"{rng.choice(WORDS)} {rng.choice(PRODUCTS)}",
                           f"best {rng.choice(PRODUCTS)} in {ctx.city()}", f"{made_up(rng)} {rng.choice(WORDS)}",
                           f"history of {ctx.city()}"])
    if kind == "date":
        return rng.choice([f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}", rng.choice(
            ["today", "tomorrow", "Monday", "Friday", "next Tuesday", "June 3", "March 14", "the weekend"])])
    if kind == "time":
        return rng.choice([f"{rng.randint(0, 23):02d}:{rng.choice(['00', '15', '30', '45'])}",
                           f"{rng.randint(1, 12)}{rng.choice(['am', 'pm'])}", "noon", "7:30pm"])
    if kind == "int":
        return rng.choice([rng.randint(1, 10), rng.randint(1, 100), rng.randint(1, 2000)])
    if kind == "num":
        return number(rng)
    if kind == "song":
        return rng.choice([f"{made_up(rng).capitalize()} {rng.choice(WORDS).capitalize()}",
                           f"The {rng.choice(WORDS).capitalize()}", made_up(rng).capitalize()])
    if kind == "lang":
        return rng.choice(["French", "Spanish", "German", "Italian", "Japanese", "Korean", "Portuguese", "Dutch",
                           "Polish", "Turkish", "Arabic", "Hindi", "Swedish", "Greek"])
    raise ValueError(kind)


class P:
    def __init__(self, name, type, desc=None, gen=None, enum=None, req=True, mention=None):
        self.name, self.type, self.desc, self.gen, self.enum, self.req = name, type, desc, gen, enum, req
        self.mention = mention or [f"with {name.replace('_', ' ')} {{v}}"]

    def schema(self, with_desc=True):
        s = {"type": self.type}
        if self.desc and with_desc:
            s["description"] = self.desc
        if self.enum:
            s["enum"] = list(self.enum)
        return s

    def value(self, rng, ctx):
        if self.enum:
            return rng.choice(self.enum)
        if self.type == "boolean":
            return rng.choice([True, False])
        if self.type == "integer":
            return gen_value("int", rng, ctx)
        if self.type == "number":
            return gen_value(self.gen or "num", rng, ctx)
        return gen_value(self.gen or "word", rng, ctx)


def say(v):
    """How a value is written in the user's message (JSON booleans as true/false, numbers plainly)."""
    if v is True:
        return "true"
    if v is False:
        return "false"
    return str(v)


class Tool:
    def __init__(self, name, desc, params, asks, result, answers, capability, errors=None, descs=None):
        self.name, self.desc, self.params, self.asks = name, desc, params, asks
        self.result, self.answers, self.capability = result, answers, capability
        self.errors = errors or ["Service unavailable", "Request timed out", "Internal error",
                                 "Rate limit exceeded, try again later"]
        self.descs = descs or [desc]

    def schema(self, rng, shuffle=False):
        ps = list(self.params)
        if shuffle:
            rng.shuffle(ps)
        with_desc = rng.random() < 0.7
        desc = self.desc if rng.random() < 0.8 else rng.choice(self.descs)
        # the template's tojson escapes these differently across engines / HTML-escapes them: keep them out
        assert desc.isascii() and not any(c in desc for c in "'<>&"), desc
        return ps, {"type": "function", "function": {
            "name": self.name, "description": desc,
            "parameters": {"type": "object", "properties": {p.name: p.schema(with_desc) for p in ps},
                           "required": [p.name for p in ps if p.req]}}}


def R(**kw):
    return kw


# ----------------------------------------------------------------------------------------------------------
# the demo toolset

def weather_result(a, rng, ctx):
    r = rng.random()
    if r < 0.45:
        return {"temperature_c": rng.randint(-25, 42), "condition": rng.choice(CONDITIONS)}
    if r < 0.65:
        # the shape of the demo page's tool (www/tools.js)
        return {"city": a["city"], "temperature_c": rng.randint(-25, 42), "condition": rng.choice(CONDITIONS)}
    if r < 0.8:
        return {"city": a["city"], "temperature_c": rng.randint(-25, 42), "condition": rng.choice(CONDITIONS),
                "humidity": rng.randint(10, 100)}
    return {"temp_c": rng.randint(-25, 42), "conditions": rng.choice(CONDITIONS), "wind_kph": rng.randint(0, 80)}


def time_result(a, rng, ctx):
    if rng.random() < 0.3:
        return {"city": a["city"], "time": f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"}
    return {"time": gen_value("time", rng, ctx) if rng.random() < 0.2 else f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}",
            "timezone": rng.choice(TZ)}


def calculate_result(a, rng, ctx):
    if rng.random() < 0.4:
        return {"expression": a["expression"], "result": calc_result(rng)}
    return {"result": calc_result(rng)}


def convert_result(a, rng, ctx):
    v = round(rng.uniform(0, 9000), rng.randint(0, 3))
    if rng.random() < 0.4:
        return {"value": a["value"], "from": a["from"], "to": a["to"], "result": v}
    return {"value": v, "unit": a["to"]}


def note_result(a, rng, ctx):
    return rng.choice([{"ok": True, "id": rng.randint(1, 500)}, {"status": "saved", "id": rng.randint(1, 500)}, {"ok": True},
                       {"saved": a["text"], "count": rng.randint(1, 40)}])


def demo_tools():
    city = lambda: P("city", "string", "City name", gen="city")
    return [
        Tool("get_weather", "Get the current weather for a city.", [city()],
             asks=["What's the weather in {city}?", "weather in {city}", "How's the weather in {city} today?",
                   "Is it raining in {city}?", "Tell me the weather for {city}.", "What is the weather like in {city}",
                   "Can you check the weather in {city}?", "{city} weather", "How hot is it in {city} right now?",
                   "Do I need an umbrella in {city}?", "what's it like outside in {city}", "Current weather, {city}?",
                   "Give me the forecast for {city}.", "Weather for {city} please", "is it cold in {city}?",
                   "I'm heading to {city}. What's the weather there?", "check {city} weather",
                   "How warm is it in {city}?", "What are the conditions in {city} at the moment?",
                   "temperature in {city}?", "Could you look up the weather in {city} for me?",
                   "Is it sunny in {city}?", "what is the temperature in {city}", "weather {city}",
                   "I want to know the weather in {city}.", "Any idea what the weather is in {city}?"],
             result=weather_result,
             answers=["It's {temperature_c}°C and {condition} in {city}.", "In {city} it is currently {temperature_c}°C and {condition}.",
                      "The weather in {city}: {condition}, {temperature_c}°C.", "{city} is {condition} right now, at {temperature_c} degrees Celsius.",
                      "Right now {city} has {condition} skies and a temperature of {temperature_c}°C."],
             capability="check the weather",
             errors=["City not found: {city}", "Weather service unavailable", "Unknown location '{city}'", "timeout",
                     "no weather data for {city}; known cities: Paris, London, Tokyo, New York, Berlin, Sydney"],
             descs=["Returns current weather conditions for the given city.", "Look up the weather in a city."]),
        Tool("get_time", "Get the current local time in a city.", [city()],
             asks=["What time is it in {city}?", "time in {city}", "What's the local time in {city}?",
                   "Tell me the current time in {city}.", "Can you check what time it is in {city}?", "{city} time",
                   "Is it late in {city} right now?", "what is the time in {city}", "Current time in {city} please",
                   "Do you know the time in {city}?", "I need the time in {city}.", "what hour is it in {city}",
                   "clock in {city}?", "Could you tell me the local time of {city}?", "Is it morning in {city}?",
                   "What time do they have in {city} now?", "check the time in {city}", "time {city}",
                   "How late is it in {city}?", "Give me the time in {city}."],
             result=time_result,
             answers=["It's {time} in {city} ({timezone}).", "The local time in {city} is {time} ({timezone}).",
                      "In {city} it is {time}, {timezone}.", "Right now it's {time} in {city}."],
             capability="tell the time",
             errors=["City not found: {city}", "Unknown time zone for '{city}'", "Service unavailable", "unknown city {city}"],
             descs=["Returns the current local time for the given city.", "Look up the time in a city."]),
        Tool("calculate", "Evaluate a math expression.", [P("expression", "string", "The expression to evaluate", gen="expr")],
             asks=["What is {expression}?", "calculate {expression}", "Compute {expression}", "{expression} = ?",
                   "How much is {expression}?", "what's {expression}", "Can you calculate {expression} for me?",
                   "Solve {expression}", "Please work out {expression}.", "{expression}?", "evaluate {expression}",
                   "I need the result of {expression}.", "Quick math: {expression}", "Do the math: {expression}",
                   "what does {expression} equal", "Find {expression}.", "calc {expression}",
                   "Help me compute {expression}", "What do you get for {expression}?"],
             result=calculate_result,
             answers=["{expression} = {result}.", "The result is {result}.", "{expression} equals {result}.",
                      "That comes to {result}.", "The answer is {result}."],
             capability="do calculations",
             errors=["Invalid expression: {expression}", "Division by zero", "Syntax error in expression",
                     'cannot evaluate "{expression}": the result is not a finite number'],
             descs=["Calculator: evaluates an arithmetic expression.", "Evaluate an arithmetic expression and return the result."]),
        Tool("convert_units", "Convert a value from one unit to another.",
             [P("value", "number", "The value to convert", gen="num"), P("from", "string", "Unit to convert from", gen="unit_from"),
              P("to", "string", "Unit to convert to", gen="unit_to")],
             asks=["Convert {value} {from} to {to}", "How many {to} is {value} {from}?", "What's {value} {from} in {to}?",
                   "{value} {from} to {to}", "convert {value} {from} into {to} please", "{value} {from} in {to}?",
                   "Can you convert {value} {from} to {to}?", "How much is {value} {from} in {to}?",
                   "I have {value} {from}. How many {to} is that?", "Please express {value} {from} in {to}.",
                   "what is {value} {from} in {to}", "change {value} {from} to {to}",
                   "Turn {value} {from} into {to}.", "{value} {from} equals how many {to}?",
                   "Convert {value} from {from} to {to}.", "from {from} to {to}: {value}"],
             result=convert_result,
             answers=["{v} {from} is {value} {unit}.", "That's {value} {unit}.", "{v} {from} = {value} {unit}.",
                      "It comes to {value} {unit}."],
             capability="convert units",
             errors=["Unknown unit: {from}", "Cannot convert {from} to {to}", "Unknown unit: {to}", "unknown unit {from}",
                     "cannot convert length ({from}) to mass ({to})"],
             descs=["Unit converter for length, weight, temperature, volume and more.", "Convert between units."]),
        Tool("add_note", "Save a note.", [P("text", "string", "The note text", gen="text")],
             asks=["Add a note: {text}", "Make a note to {text}", "Note: {text}", "Save a note saying {text}",
                   "Please write down: {text}", "add note {text}", "Can you note that I need to {text}?",
                   "Jot this down: {text}", "Create a note \"{text}\"", "Remember this: {text}",
                   "Put \"{text}\" in my notes.", "Take a note: {text}", "new note: {text}", "Store a note: {text}",
                   "Please add \"{text}\" to my notes", "Write a note that says {text}."],
             result=note_result,
             answers=["Done, I saved the note \"{text}\".", "Noted: {text}.", "I added \"{text}\" to your notes.",
                      "Saved! Your note \"{text}\" is stored."],
             capability="save notes",
             errors=["Storage is full", "Could not save the note", "Note storage unavailable"],
             descs=["Adds a note to the notes of the user.", "Store a text note."]),
        Tool("list_notes", "List all saved notes.", [],
             asks=["Show my notes", "What are my notes?", "list notes", "Read me my notes.", "What did I write down?",
                   "Can you list my notes?", "show me everything in my notes", "Do I have any notes?",
                   "What's in my notes?", "Display my saved notes.", "my notes please", "Which notes have I saved?",
                   "Open my notes", "What notes do I have?"],
             result=lambda a, rng, ctx: {"notes": [note_text(rng) for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 4]))]},
             answers=None,
             capability="read your notes",
             errors=["Note storage unavailable", "Could not read notes"],
             descs=["Returns all notes the user has saved.", "List the notes of the user."]),
    ]


EVAL_ASKS = {
    "get_weather": ["Yo, what's the weather doing over in {city}?", "Should I bring a jacket in {city} today?",
                    "Report the current weather conditions for {city}, please.", "Hey, is {city} sunny or rainy right now?",
                    "I'd like a weather update for {city}.", "Could you find out how the weather is in {city}?",
                    "Planning a walk in {city} - what's the weather?", "whats the weather at {city} rn"],
    "get_time": ["Hey, what's the clock saying in {city}?", "I need to call someone in {city}. What time is it there?",
                 "Please report the local time in {city}.", "Could you find out the current hour in {city}?",
                 "Is it night already in {city}? What time is it?", "what time's it over in {city}",
                 "Tell me the time right now in {city}, thanks.", "Got the current time for {city}?"],
    "calculate": ["Figure out {expression} for me.", "Hey, what would {expression} give?", "Result of {expression}, please.",
                  "I can't do this in my head: {expression}", "Could you tell me what {expression} comes to?",
                  "Work this out: {expression}", "pls compute {expression}", "Mind solving {expression}?"],
    "convert_units": ["I need {value} {from} expressed in {to}.", "If I have {value} {from}, what's that in {to}?",
                      "Help me convert {value} {from} to {to}, please.", "quick conversion: {value} {from} -> {to}",
                      "Could you tell me {value} {from} in {to}?", "Translate {value} {from} into {to}.",
                      "How many {to} are in {value} {from}?", "Switch {value} {from} over to {to}."],
    "add_note": ["Could you save this as a note: {text}", "Don't let me forget: {text}",
                 "Please record a note that reads {text}", "Add this to my notes - {text}",
                 "Keep a note for me: {text}", "I want a note with the text \"{text}\"",
                 "Write this down for me: {text}", "Make a new note: {text}"],
    "list_notes": ["Remind me what notes I've got.", "Pull up my notes, please.", "Could you read back my saved notes?",
                   "Let me see my notes.", "Anything saved in my notes?", "Go through my notes for me.",
                   "Show all of my notes", "What have I noted so far?"],
}

PHRASE_GUARD = EvalGuard(EVAL_ASKS)


# ----------------------------------------------------------------------------------------------------------
# a catalogue of realistic tools (training) and a held-out one (evaluation only)

def generic_result(fields):
    def f(a, rng, ctx):
        out = {}
        for k, kind in fields:
            out[k] = gen_value(kind, rng, ctx) if kind in ("word", "city", "person", "product", "code", "date", "time", "int", "num", "text", "song") else kind(rng)
        return out
    return f


def catalogue_tools():
    pr = lambda lo, hi: (lambda rng: round(rng.uniform(lo, hi), 2))
    st = lambda *xs: (lambda rng: rng.choice(xs))
    T = Tool
    return [
        T("search_web", "Search the web and return the top result.", [P("query", "string", "Search terms", gen="query")],
          ["Search the web for {query}", "Look up {query} online", "google {query}", "Find information about {query}.",
           "Can you search for {query}?", "web search: {query}"],
          generic_result([("title", "text"), ("url", st("https://example.com/a", "https://wiki.example.org/page", "https://news.example.net/1"))]),
          ["The top result is \"{title}\" ({url}).", "I found \"{title}\" at {url}."], "search the web"),
        T("send_email", "Send an email.", [P("to", "string", "Recipient address", gen="email"), P("subject", "string", "Subject line", gen="text"),
                                           P("body", "string", "Message body", gen="text", req=False, mention=["saying {v}", "with the body {v}"])],
          ["Send an email to {to} with subject {subject}", "Email {to} about {subject}", "Write an email to {to}, subject: {subject}",
           "Please email {to} with the subject \"{subject}\""],
          lambda a, rng, ctx: {"sent": True, "message_id": gen_value("code", rng, ctx)},
          ["Email sent to {to} (id {message_id}).", "Done, your email to {to} was sent."], "send emails",
          ["Invalid address: {to}", "Mail server unavailable"]),
        T("set_timer", "Start a countdown timer.", [P("minutes", "number", "Duration in minutes", gen="num"),
                                                   P("label", "string", "Optional label", gen="word", req=False, mention=["called {v}", "labeled {v}"])],
          ["Set a timer for {minutes} minutes", "timer {minutes} min", "Start a {minutes} minute timer", "Count down {minutes} minutes please"],
          lambda a, rng, ctx: {"timer_id": rng.randint(1, 99), "ends_at": gen_value("time", rng, ctx)},
          ["Timer set for {minutes} minutes; it ends at {ends_at}.", "Your timer (#{timer_id}) ends at {ends_at}."], "set timers"),
        T("get_stock_price", "Get the latest price of a stock.", [P("symbol", "string", "Ticker symbol", gen="ticker")],
          ["What's the stock price of {symbol}?", "How is {symbol} trading?", "price of {symbol} stock", "Check {symbol} shares",
           "quote for {symbol}"],
          lambda a, rng, ctx: {"symbol": a["symbol"], "price": round(rng.uniform(1, 900), 2), "currency": rng.choice(["USD", "EUR", "GBP"])},
          ["{symbol} is at {price} {currency}.", "One share of {symbol} costs {price} {currency}."], "check stock prices"),
        T("translate_text", "Translate text into another language.",
          [P("text", "string", "Text to translate", gen="text"), P("target_language", "string", "Language to translate into", gen="lang")],
          ["Translate \"{text}\" to {target_language}", "How do you say \"{text}\" in {target_language}?",
           "Translate {text} into {target_language}", "{target_language} translation of \"{text}\" please"],
          lambda a, rng, ctx: {"translation": made_up(rng) + " " + made_up(rng)},
          ["In {target_language}: \"{translation}\".", "The translation is \"{translation}\"."], "translate text"),
        T("play_music", "Play a song.", [P("song", "string", "Song title", gen="song"),
                                         P("artist", "string", "Artist name", gen="person", req=False, mention=["by {v}"])],
          ["Play {song}", "Put on {song}", "I want to hear {song}", "play the song {song} please"],
          lambda a, rng, ctx: {"playing": a["song"], "duration": f"{rng.randint(2, 6)}:{rng.randint(10, 59)}"},
          ["Now playing {playing} ({duration}).", "Playing {playing}."], "play music"),
        T("get_news", "Get the latest headlines on a topic.", [P("topic", "string", "News topic", gen="word"),
                                                              P("country", "string", "Country code", gen="code", req=False, mention=["in {v}", "for country {v}"])],
          ["Any news about {topic}?", "Latest headlines on {topic}", "What's new with {topic}?", "news {topic}"],
          generic_result([("headline", "text"), ("source", st("Daily Post", "World Wire", "The Ledger"))]),
          ["Top headline: \"{headline}\" ({source}).", "{source} reports: {headline}."], "get the news"),
        T("book_table", "Book a table at a restaurant.",
          [P("restaurant", "string", "Restaurant name", gen="product"), P("people", "integer", "Number of guests"),
           P("time", "string", "Reservation time", gen="time")],
          ["Book a table at {restaurant} for {people} at {time}", "Reserve {restaurant} for {people} people at {time}",
           "Get me a table for {people} at {restaurant}, {time}", "Can you book {restaurant} at {time} for {people}?"],
          lambda a, rng, ctx: {"confirmed": True, "booking_id": gen_value("code", rng, ctx)},
          ["Your table at {restaurant} for {people} at {time} is booked (booking {booking_id}).", "Booked! Reference {booking_id}."],
          "book restaurants", ["No tables available at {time}", "Restaurant not found: {restaurant}"]),
        T("get_exchange_rate_today", "Get the current exchange rate between two currencies.",
          [P("base", "string", "Base currency code", enum=["USD", "EUR", "GBP", "JPY", "CHF", "CAD"]),
           P("quote", "string", "Quote currency code", enum=["USD", "EUR", "GBP", "JPY", "CHF", "CAD"])],
          ["What's the {base} to {quote} rate?", "exchange rate {base} {quote}", "How many {quote} for one {base}?",
           "Convert currency rate from {base} to {quote}"],
          lambda a, rng, ctx: {"rate": round(rng.uniform(0.1, 160), 4)},
          ["1 {base} = {rate} {quote}.", "The rate is {rate} {quote} per {base}."], "look up exchange rates"),
        T("create_event", "Create a calendar event.",
          [P("title", "string", "Event title", gen="text"), P("date", "string", "Date of the event", gen="date"),
           P("time", "string", "Start time", gen="time", req=False, mention=["at {v}"])],
          ["Create an event {title} on {date}", "Add {title} to my calendar for {date}", "Schedule \"{title}\" on {date}",
           "put {title} in the calendar on {date}"],
          lambda a, rng, ctx: {"event_id": rng.randint(100, 9999), "status": "created"},
          ["Event \"{title}\" created for {date} (id {event_id}).", "Added \"{title}\" on {date}."], "manage your calendar"),
        T("get_directions", "Get travel directions between two places.",
          [P("origin", "string", "Start location", gen="city"), P("destination", "string", "End location", gen="city"),
           P("mode", "string", "Travel mode", enum=["driving", "walking", "transit", "cycling"], req=False, mention=["by {v}", "{v}"])],
          ["Directions from {origin} to {destination}", "How do I get from {origin} to {destination}?",
           "Route from {origin} to {destination} please", "Navigate from {origin} to {destination}"],
          lambda a, rng, ctx: {"distance_km": rng.randint(1, 2000), "duration": f"{rng.randint(1, 30)} h {rng.randint(0, 59)} min"},
          ["From {origin} to {destination}: {distance_km} km, about {duration}.", "It's {distance_km} km and takes {duration}."],
          "give directions"),
        T("check_order_status", "Check the status of an order.", [P("order_id", "string", "Order number", gen="code")],
          ["Where is my order {order_id}?", "Status of order {order_id}", "Track order {order_id}", "Has order {order_id} shipped?"],
          lambda a, rng, ctx: {"status": rng.choice(["shipped", "processing", "delivered", "delayed"]), "eta": gen_value("date", rng, ctx)},
          ["Order {order_id} is {status}, expected {eta}.", "Your order {order_id}: {status} (ETA {eta})."], "track orders",
          ["Order not found: {order_id}"]),
        T("set_reminder", "Set a reminder.", [P("text", "string", "What to remind about", gen="text"), P("time", "string", "When", gen="time")],
          ["Remind me to {text} at {time}", "Set a reminder at {time}: {text}", "At {time} remind me to {text}",
           "reminder for {time} to {text}"],
          lambda a, rng, ctx: {"reminder_id": rng.randint(1, 999)},
          ["OK, I'll remind you to {text} at {time}.", "Reminder #{reminder_id} set for {time}."], "set reminders"),
        T("turn_on_lights", "Turn on the lights in a room.", [P("room", "string", "Room name", enum=["kitchen", "bedroom", "living room", "office", "bathroom", "garage"]),
                                                             P("brightness", "integer", "Brightness 0-100", req=False, mention=["at {v} percent", "to {v}%"])],
          ["Turn on the lights in the {room}", "lights on in the {room}", "Switch on the {room} lights", "Can you light up the {room}?"],
          lambda a, rng, ctx: {"room": a["room"], "on": True},
          ["The {room} lights are on.", "Done, lights on in the {room}."], "control the lights"),
        T("get_definition", "Look up the definition of a word.", [P("word", "string", "The word", gen="word")],
          ["Define {word}", "What does {word} mean?", "Meaning of {word}", "dictionary: {word}", "What's the definition of {word}?"],
          lambda a, rng, ctx: {"definition": note_text(rng)},
          ["{word}: {definition}.", "\"{word}\" means: {definition}."], "look up definitions", ["No definition found for {word}"]),
        T("roll_dice", "Roll dice.", [P("sides", "integer", "Sides per die"), P("count", "integer", "Number of dice", req=False, mention=["{v} times", "with {v} dice"])],
          ["Roll a d{sides}", "Roll a {sides}-sided die", "roll dice with {sides} sides", "Throw a {sides} sided die"],
          lambda a, rng, ctx: {"rolls": [rng.randint(1, 6) for _ in range(rng.randint(1, 3))]},
          None, "roll dice"),
        T("find_contact", "Find the phone number and email of a contact.", [P("name", "string", "Contact name", gen="person")],
          ["What's {name}'s number?", "Find contact {name}", "Look up {name} in my contacts", "How can I reach {name}?"],
          lambda a, rng, ctx: {"phone": f"+{rng.randint(1, 99)} {rng.randint(100, 999)} {rng.randint(1000, 9999)}", "email": gen_value("email", rng, ctx)},
          ["{name}: {phone}, {email}.", "You can reach {name} at {phone}."], "look up contacts", ["Contact not found: {name}"]),
        T("get_population", "Get the population of a city.", [P("city", "string", "City name", gen="city")],
          ["What's the population of {city}?", "How many people live in {city}?", "population {city}", "How big is {city}?"],
          lambda a, rng, ctx: {"population": rng.randint(1000, 30000000), "year": rng.randint(2015, 2025)},
          ["{city} has {population} inhabitants ({year}).", "The population of {city} is {population}."], "look up populations"),
        T("get_air_quality", "Get the air quality index for a city.", [P("city", "string", "City name", gen="city")],
          ["What's the air quality in {city}?", "AQI in {city}", "Is the air clean in {city}?", "air pollution in {city}"],
          lambda a, rng, ctx: {"aqi": rng.randint(5, 300), "level": rng.choice(["good", "moderate", "unhealthy", "poor"])},
          ["The air quality in {city} is {level} (AQI {aqi}).", "AQI {aqi} in {city}, which is {level}."], "check air quality"),
        T("search_products", "Search the shop catalogue.", [P("query", "string", "What to look for", gen="product"),
                                                            P("max_price", "number", "Maximum price", req=False, mention=["under {v}", "for less than {v}"])],
          ["Find {query} in the shop", "Search products for {query}", "Do you sell {query}?", "Show me {query} products"],
          lambda a, rng, ctx: {"results": rng.randint(0, 50), "cheapest": round(rng.uniform(1, 500), 2)},
          ["I found {results} results for {query}; the cheapest is {cheapest}.", "{results} products match, from {cheapest}."], "search the shop"),
    ]


def held_out_tools():
    """Never used in training: evaluation of unseen tools."""
    T = Tool
    return [
        T("track_package", "Track a parcel by its tracking number.", [P("tracking_number", "string", "Carrier tracking number", gen="code")],
          ["Where's my parcel {tracking_number}?", "Track package {tracking_number}", "Can you track {tracking_number}?"],
          lambda a, rng, ctx: {"location": ctx.city(), "status": rng.choice(["in transit", "out for delivery"])},
          ["Package {tracking_number} is {status} in {location}.", "It's {status}, last seen in {location}."], "track packages"),
        T("find_recipe", "Find a recipe.", [P("ingredient", "string", "Main ingredient", gen="word"),
                                            P("cuisine", "string", "Cuisine", enum=["italian", "mexican", "thai", "indian", "french"])],
          ["Find me a {cuisine} recipe with {ingredient}", "I want to cook something {cuisine} using {ingredient}",
           "Recipe idea: {cuisine}, with {ingredient}"],
          lambda a, rng, ctx: {"recipe": f"{a['ingredient']} {rng.choice(['stew', 'salad', 'curry', 'pie'])}", "minutes": rng.randint(10, 120)},
          ["Try {recipe}; it takes {minutes} minutes.", "How about {recipe} ({minutes} min)?"], "find recipes"),
        T("get_sunrise", "Get sunrise and sunset times for a city.", [P("city", "string", "City", gen="city")],
          ["When does the sun rise in {city}?", "Sunrise time for {city}", "What time is sunrise in {city} tomorrow?"],
          lambda a, rng, ctx: {"sunrise": f"0{rng.randint(4, 8)}:{rng.randint(10, 59)}", "sunset": f"{rng.randint(16, 21)}:{rng.randint(10, 59)}"},
          ["In {city} the sun rises at {sunrise} and sets at {sunset}.", "Sunrise {sunrise}, sunset {sunset} in {city}."], "look up sunrise times"),
        T("mute_notifications", "Mute notifications for a number of minutes.", [P("minutes", "integer", "How long to mute")],
          ["Mute my notifications for {minutes} minutes", "Silence notifications for {minutes} min", "Do not disturb for {minutes} minutes"],
          lambda a, rng, ctx: {"muted_until": gen_value("time", rng, ctx)},
          ["Notifications muted until {muted_until}.", "Muted until {muted_until}."], "mute notifications"),
        T("lookup_flight", "Look up the status of a flight by flight number.", [P("flight_number", "string", "e.g. LH400", gen="code")],
          ["Is flight {flight_number} on time?", "Status of flight {flight_number}", "When does {flight_number} land?"],
          lambda a, rng, ctx: {"status": rng.choice(["on time", "delayed", "boarding"]), "gate": f"{rng.choice('ABCD')}{rng.randint(1, 40)}"},
          ["Flight {flight_number} is {status}, gate {gate}.", "{flight_number}: {status} at gate {gate}."], "check flights"),
        T("rate_movie", "Get the rating of a movie.", [P("title", "string", "Movie title", gen="song")],
          ["How good is the movie {title}?", "What's the rating of {title}?", "Is {title} worth watching?"],
          lambda a, rng, ctx: {"rating": round(rng.uniform(1, 10), 1), "votes": rng.randint(10, 90000)},
          ["{title} is rated {rating}/10 ({votes} votes).", "It has a rating of {rating}."], "rate movies"),
    ]


# ----------------------------------------------------------------------------------------------------------
# procedural tools: random names, descriptions and parameters

VERBS = ["get", "fetch", "check", "find", "lookup", "list", "create", "update", "delete", "start", "stop", "reset",
         "open", "close", "search", "count", "measure", "scan", "sync", "export", "import", "archive", "rename",
         "schedule", "cancel", "enable", "disable", "calibrate", "submit", "register", "estimate", "predict", "order"]
NOUNS = ["account", "invoice", "ticket", "sensor", "device", "playlist", "garden", "battery", "printer", "shipment",
         "project", "task", "meeting", "budget", "inventory", "recipe", "route", "vehicle", "parking", "room",
         "thermostat", "alarm", "door", "camera", "file", "folder", "report", "score", "balance", "subscription",
         "library_book", "flight", "hotel", "train", "bus", "lesson", "workout", "plant", "pet", "order", "coupon",
         "badge", "license", "server", "database", "backup", "website", "domain", "stream", "podcast", "team"]
PNAMES = ["name", "id", "count", "color", "date", "level", "mode", "amount", "label", "priority", "owner", "location",
          "size", "limit", "format", "language", "category", "code", "region", "duration", "speed", "status", "tag",
          "quantity", "email", "title", "note", "room", "zone", "channel", "version", "target", "source", "kind"]
FIELDS = ["status", "value", "count", "total", "result", "message", "id", "level", "updated", "owner", "price",
          "score", "remaining", "state", "name", "code", "eta", "location"]


def procedural_tool(rng, ctx, name_taken):
    while True:
        verb = rng.choice(VERBS)
        noun = rng.choice(NOUNS) if rng.random() < 0.65 else made_up(rng, rng.choice([2, 3]))
        if rng.random() < 0.3:
            noun = noun + "_" + rng.choice(["status", "level", "info", "details", "history", "settings", "count", "list"])
        name = f"{verb}_{noun}"
        if name not in name_taken:
            break
    nw = noun.replace("_", " ")
    params = []
    for pname in rng.sample(PNAMES + [made_up(rng, 2) for _ in range(3)], rng.choice([0, 1, 1, 1, 2, 2, 2, 3])):
        t = rng.random()
        if t < 0.55:
            p = P(pname, "string", rng.choice([None, f"The {pname}", f"{pname.capitalize()} of the {nw}"]),
                  gen=rng.choice(["word", "word", "city", "person", "product", "code", "date", "time"]))
        elif t < 0.7:
            p = P(pname, "integer", rng.choice([None, f"The {pname}"]))
        elif t < 0.82:
            p = P(pname, "number", rng.choice([None, f"The {pname}"]), gen="num")
        elif t < 0.92:
            p = P(pname, "string", None, enum=rng.sample(["low", "medium", "high", "on", "off", "auto", "red", "green", "blue",
                                                          "daily", "weekly", "fast", "slow", "small", "large", "json", "csv"], rng.randint(2, 4)))
        else:
            p = P(pname, "boolean", rng.choice([None, f"Whether to {pname}"]))
        pw = pname.replace("_", " ")
        p.mention = [f"with {pw} {{v}}", f"{pw} {{v}}", f"({pw}: {{v}})", f"where {pw} is {{v}}", f"and {pw} = {{v}}",
                     f"{pw}={{v}}"]
        p.req = rng.random() < 0.8
        params.append(p)
    if params and rng.random() < 0.4 and params[0].type == "string" and not params[0].enum:
        params[0].req = True
        params[0].mention = params[0].mention + ["for {v}", "of {v}"]
    vphr = {"lookup": "look up", "get": rng.choice(["get", "show"])}.get(verb, verb)
    asks = [f"{vphr} the {nw}", f"Can you {vphr} the {nw}?", f"Please {vphr} my {nw}", f"I need you to {vphr} the {nw}.",
            f"{vphr.capitalize()} {nw}", f"could you {vphr} the {nw} for me"]
    fields = rng.sample(FIELDS, rng.randint(1, 3))

    def result(a, rng2, ctx2):
        return {f: rng2.choice([gen_value("word", rng2, ctx2), rng2.randint(0, 9999), gen_value("code", rng2, ctx2),
                                gen_value("date", rng2, ctx2), round(rng2.uniform(0, 100), 1)]) for f in fields}

    answers = [f"The {nw} " + ", ".join(f"{f.replace('_', ' ')} is {{{f}}}" for f in fields) + ".",
               "Done. " + "; ".join(f"{f}: {{{f}}}" for f in fields) + ".",
               "Here is the result: " + ", ".join(f"{f} {{{f}}}" for f in fields) + "."]
    desc = rng.choice([f"{vphr.capitalize()} the {nw}.", f"{vphr.capitalize()} a {nw}.", f"{vphr.capitalize()} {nw} data.",
                       f"Use this to {vphr} the {nw}.", f"{vphr.capitalize()} the {nw} of the user."])
    return Tool(name, desc, params, asks, result, answers, f"{vphr} the {nw}",
                errors=[f"{nw.capitalize()} not found", "Permission denied", "Service unavailable", "Invalid arguments"])


# ----------------------------------------------------------------------------------------------------------
# phrasing noise

FILLER_PRE = ["", "", "", "", "hey, ", "Hi! ", "please ", "Quick question: ", "ok so ", "Hello, ", "um, ", "So, ",
              "Excuse me, ", "hey wisp, ", "Yo ", "Hi there. ", "Good morning! ", "I was wondering, "]
FILLER_POST = ["", "", "", "", " thanks", " Thanks!", " please", " thank you.", " :)", " asap", " Thx.", " cheers"]


def typo(word, rng):
    if len(word) < 4 or not word.isalpha():
        return word
    i = rng.randrange(1, len(word) - 1)
    r = rng.random()
    if r < 0.3:
        return word[:i] + word[i + 1:]
    if r < 0.6:
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if r < 0.8:
        return word[:i] + word[i] + word[i:]
    return word[:i] + rng.choice(string.ascii_lowercase) + word[i + 1:]


def noisy(text, rng, strength=1.0):
    """Noise on template text only (placeholders are filled in afterwards)."""
    if rng.random() < 0.15 * strength:
        parts = text.split(" ")
        for _ in range(rng.randint(1, 2)):
            j = rng.randrange(len(parts))
            if "{" not in parts[j]:
                parts[j] = typo(parts[j], rng)
        text = " ".join(parts)
    r = rng.random()
    if r < 0.15 * strength:
        text = lower_outside(text)
    elif r < 0.18 * strength:
        text = upper_outside(text)
    elif r < 0.3 * strength and text and text[0].islower():
        text = text[0].upper() + text[1:]
    if rng.random() < 0.15 * strength and text and text[-1] in "?.!":
        text = text[:-1]
    elif rng.random() < 0.05 * strength and text and text[-1] in "?.!":
        text = text + text[-1]
    text = rng.choice(FILLER_PRE) + text + rng.choice(FILLER_POST) if rng.random() < 0.35 * strength else text
    return text


def _outside(text, fn):
    out, depth = [], 0
    for ch in text:
        if ch == "{":
            depth += 1
        if depth:
            out.append(ch)
        else:
            out.append(fn(ch))
        if ch == "}":
            depth -= 1
    return "".join(out)


def lower_outside(t):
    return _outside(t, str.lower)


def upper_outside(t):
    return _outside(t, str.upper)


def fill(template, values):
    out = template
    for k, v in values.items():
        out = out.replace("{" + k + "}", say(v))
    return out


# ----------------------------------------------------------------------------------------------------------
# conversation builders

SYSTEMS = ["You are a helpful assistant.", "You are Wisp, a helpful assistant running in the browser.",
           "You are a helpful assistant. Use the tools when they help.", "You are a concise assistant.",
           "You are Wisp. Answer briefly.", "You are a friendly assistant on this web page.",
           "You help users of this website.", "Be helpful and brief."]
EVAL_SYSTEMS = ["You are the assistant of this page.", "You are a helpful assistant."]

SMALLTALK = [
    ("hi", ["Hello! How can I help you?", "Hi! What can I do for you?"]),
    ("hello", ["Hello! How can I help you today?"]), ("hey there", ["Hey! What can I do for you?"]),
    ("good morning", ["Good morning! How can I help?"]), ("how are you?", ["I'm doing well, thanks! How can I help you?"]),
    ("thanks!", ["You're welcome!", "Happy to help!"]), ("thank you so much", ["You're welcome!"]),
    ("who are you?", ["I'm a small assistant that runs in your browser. I can use the tools this page provides."]),
    ("what's your name?", ["I'm Wisp, a small assistant running in your browser."]),
    ("bye", ["Goodbye! Have a nice day."]), ("ok", ["Let me know if you need anything else."]),
    ("cool", ["Glad you like it! Anything else?"]), ("tell me a joke", ["Why did the computer go to the doctor? It had a virus.",
                                                                       "I told my computer a joke, but it didn't get it: it needed more bytes."]),
    ("are you a robot?", ["I'm an AI assistant, a small language model running in your browser."]),
    ("nice to meet you", ["Nice to meet you too! How can I help?"]), ("good night", ["Good night! Sleep well."]),
    ("what is the capital of France?", ["The capital of France is Paris."]),
    ("how many days are in a week?", ["There are 7 days in a week."]), ("what color is the sky?", ["The sky is usually blue during the day."]),
    ("say hello in Spanish", ["Hola!"]), ("is water wet?", ["Yes, water makes things wet."]),
    ("can you help me?", ["Of course! What do you need?"]), ("I'm bored", ["How about a walk, a book, or a new recipe? I can also help with the tools on this page."]),
    ("what's 2 plus 2?", None), ("do you like music?", ["I don't listen to music, but I'm happy to help you with something."]),
    ("how many hours are in a day?", ["A day has 24 hours."]), ("what language do you speak?", ["I speak English."]),
    ("you're great", ["Thank you! Happy to help."]), ("sorry", ["No problem at all!"]), ("help", None),
]
EVAL_SMALLTALK = ["hiya!", "good evening", "how's it going?", "many thanks", "who made you?", "see you later",
                  "what's up?", "tell me something nice", "I'm back", "do you have feelings?", "lol", "you are funny",
                  "what can you tell me about yourself?", "howdy", "great job", "is it fun being an assistant?"]


class Ctx:
    def __init__(self, rng, cities, name_seen, exclude_names):
        self.rng, self.cities, self.name_seen, self.exclude = rng, cities, name_seen, exclude_names

    def city(self):
        rng = self.rng
        if rng.random() < 0.5:
            c = rng.choice(self.cities)
        else:
            while True:
                c = made_up_place(rng)
                if c not in self.exclude:
                    break
            if self.name_seen is not None:
                self.name_seen.add(c)
        if rng.random() < 0.06:
            c = c.lower()
        return c

    def person(self):
        rng = self.rng
        r = rng.random()
        if r < 0.4:
            return f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        if r < 0.6:
            return rng.choice(FIRST)
        return f"{made_up(rng).capitalize()} {made_up(rng).capitalize()}"


def tool_args(tool, params, rng, ctx):
    """Values for one call, in the schema order of `params` (as rendered in the prompt)."""
    vals = {}
    for p in tool.params:
        if p.gen in ("unit_from", "unit_to"):
            continue
        if p.req or rng.random() < 0.5:
            if p.gen == "expr":
                vals[p.name] = expression(rng)
            else:
                vals[p.name] = p.value(rng, ctx)
    if tool.name == "convert_units":
        f, t = rng.choice(ctx.units)
        if rng.random() < 0.5:
            f, t = t, f
        vals["from"], vals["to"] = f, t
    return vals


def ask_text(tool, vals, rng, asks, noise=1.0):
    tpl = rng.choice(asks)
    opt = [p for p in tool.params if p.name in vals and "{" + p.name + "}" not in tpl]
    if opt:
        extra = ""
        for p in opt:
            extra += " " + rng.choice(p.mention).replace("{v}", "{" + p.name + "}")
        if tpl and tpl[-1] in "?.!":
            tpl = tpl[:-1] + extra + tpl[-1]
        else:
            tpl = tpl + extra
    tpl = noisy(tpl, rng, noise)
    return fill(tpl, vals)


def ordered(params, vals):
    return {p.name: vals[p.name] for p in params if p.name in vals}


def call_msg(tool_name, args, content=None):
    return {"role": "assistant", "content": content,
            "tool_calls": [{"type": "function", "function": {"name": tool_name, "arguments": cjson(args)}}]}


def tool_json(obj, rng):
    if rng.random() < 0.5:
        return cjson(obj)
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def fmt_answer(tool, args, res, rng):
    if tool.name == "list_notes":
        notes = res["notes"]
        if not notes:
            return rng.choice(["You have no notes yet.", "Your notes are empty.", "There are no saved notes."])
        if len(notes) == 1:
            return rng.choice([f"You have one note: {notes[0]}.", f"Your only note is \"{notes[0]}\"."])
        return rng.choice([f"You have {len(notes)} notes: " + "; ".join(notes) + ".",
                           "Here are your notes:\n" + "\n".join(f"- {n}" for n in notes)])
    if tool.name == "roll_dice":
        return "You rolled " + ", ".join(str(x) for x in res["rolls"]) + "."
    if tool.name == "get_weather" and "temp_c" in res:
        return rng.choice([f"It's {res['temp_c']}°C and {res['conditions']} in {args['city']}, with wind at {res['wind_kph']} km/h.",
                           f"{args['city']}: {res['conditions']}, {res['temp_c']}°C, wind {res['wind_kph']} km/h."])
    vals = dict(args)
    vals.update({k: v for k, v in res.items() if not isinstance(v, (list, dict))})
    if tool.name == "convert_units":
        vals["v"] = args["value"]
        vals["value"] = res["result"] if "result" in res else res["value"]
        vals["unit"] = res.get("unit", args["to"])
    for _ in range(10):
        a = rng.choice(tool.answers)
        try:
            return a.format(**{k: say(v) for k, v in vals.items()})
        except KeyError:
            continue
    return "Here is the result: " + ", ".join(f"{k} {say(v)}" for k, v in res.items() if not isinstance(v, (list, dict))) + "."


def error_answer(tool, err, rng):
    return rng.choice([f"Sorry, I couldn't {tool.capability}: {err}.", f"Sorry, that didn't work. The tool reported an error: {err}.",
                       f"I'm sorry, I wasn't able to {tool.capability} because of an error ({err}).",
                       f"Unfortunately the request failed: {err}. Please try again later.",
                       f"Sorry, something went wrong: {err}."]).replace("..", ".")


def unavailable_answer(tool, names, rng):
    cap = tool.capability
    return rng.choice([f"Sorry, I can't {cap} here: there is no tool for that on this page.",
                       f"I don't have a tool to {cap}. I can only use: {', '.join(names)}.",
                       f"Sorry, I'm not able to {cap} with the tools available here.",
                       f"Unfortunately I can't {cap}; that tool isn't available."])


def missing_arg_question(tool, p):
    pw = p.name.replace("_", " ")
    if tool.name in ("get_weather", "get_time"):
        return "Sure! Which city?"
    if tool.name == "add_note":
        return "What should the note say?"
    if tool.name == "calculate":
        return "Sure, what should I calculate?"
    return f"Sure. What {pw} should I use?"


class Builder:
    def __init__(self, rng, ctx, demo, catalogue, proc_fn, eval_mode=False):
        self.rng, self.ctx, self.demo, self.catalogue, self.proc_fn = rng, ctx, demo, catalogue, proc_fn
        self.eval_mode = eval_mode

    NTOOLS = [1, 2, 2, 3, 3, 4, 4, 5, 6]
    MIX = (0.5, 0.75)
    EPISODES = [1, 1, 2, 2, 3]

    def toolset(self, must=None, exclude=()):
        rng = self.rng
        n = rng.choice(self.NTOOLS)
        pool = []
        for _ in range(n):
            x = rng.random()
            if x < self.MIX[0]:
                pool.append(rng.choice(self.demo))
            elif x < self.MIX[1]:
                pool.append(rng.choice(self.catalogue))
            else:
                pool.append(self.proc_fn())
        if must:
            pool = list(must) + pool
        seen, tools = set(), []
        for t in pool:
            if t.name not in seen and t.name not in exclude:
                seen.add(t.name)
                tools.append(t)
        tools = tools[:max(6, len(must or []))]
        rng.shuffle(tools)
        rendered, params = [], {}
        for t in tools:
            ps, s = t.schema(rng, shuffle=rng.random() < 0.2)
            rendered.append(s)
            params[t.name] = ps
        return tools, rendered, params

    # Options at 0 draw no random numbers, so the commands of earlier phases still give the same data.
    COMPOSED = 0.0  # share of training requests for a demo tool worded by phrasing.compose (--composed)

    def asks_for(self, tool):
        if tool.name in EVAL_ASKS:
            if self.eval_mode:
                return EVAL_ASKS[tool.name]
            if self.COMPOSED and self.rng.random() < self.COMPOSED:
                return [training_ask(tool.name, self.rng, PHRASE_GUARD)]
        return tool.asks

    # one user request answered with a tool call -> result -> answer (or error)
    def episode_call(self, tool, params, msgs, error=False):
        rng = self.rng
        vals = tool_args(tool, params, rng, self.ctx)
        args = ordered(params, vals)
        msgs.append({"role": "user", "content": ask_text(tool, vals, rng, self.asks_for(tool))})
        msgs.append(call_msg(tool.name, args))
        if error:
            err = rng.choice(tool.errors)
            try:
                err = err.format(**{k: say(v) for k, v in args.items()})
            except KeyError:
                pass
            # the package passes a thrown error on as "error: MESSAGE" (pkg-templates/agent.js)
            content = "error: " + err if rng.random() < 0.5 else tool_json({"error": err}, rng)
            msgs.append({"role": "tool", "content": content})
            msgs.append({"role": "assistant", "content": error_answer(tool, err, rng)})
        else:
            res = tool.result(args, rng, self.ctx)
            msgs.append({"role": "tool", "content": tool_json(res, rng)})
            msgs.append({"role": "assistant", "content": fmt_answer(tool, args, res, rng)})

    JOINS = [", and ", ". Also ", " and then ", "; then ", ". After that, "]
    # --composed: more ways to join two requests, several of which keep the first one's question mark
    MORE_JOINS = ["? And ", "? Also, ", "? And also ", " and ", " & ", ", plus ", ". Then ", "\n", " - also ",
                  ", then ", ". Oh and ", "? Then ", ". Next, ", " + ", ", and also "]

    def episode_two(self, t1, t2, params, msgs):
        """Two requests in one message: call, result, call, result, answer (sometimes both calls at once)."""
        rng = self.rng
        v1, v2 = tool_args(t1, params[t1.name], rng, self.ctx), tool_args(t2, params[t2.name], rng, self.ctx)
        if t1.name == t2.name and v1 == v2:
            return False
        a1, a2 = ordered(params[t1.name], v1), ordered(params[t2.name], v2)
        q1 = ask_text(t1, v1, rng, self.asks_for(t1), 0.5).rstrip("?.!")
        q2 = ask_text(t2, v2, rng, self.asks_for(t2), 0.5)
        q2 = q2[0].lower() + q2[1:] if q2 and not q2[:2].isupper() else q2
        msgs.append({"role": "user", "content": q1 + rng.choice(self.JOINS) + q2})
        r1, r2 = t1.result(a1, rng, self.ctx), t2.result(a2, rng, self.ctx)
        if rng.random() < 0.3:
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"type": "function", "function": {"name": t1.name, "arguments": cjson(a1)}},
                {"type": "function", "function": {"name": t2.name, "arguments": cjson(a2)}}]})
            msgs.append({"role": "tool", "content": tool_json(r1, rng)})
            msgs.append({"role": "tool", "content": tool_json(r2, rng)})
        else:
            msgs.append(call_msg(t1.name, a1))
            msgs.append({"role": "tool", "content": tool_json(r1, rng)})
            msgs.append(call_msg(t2.name, a2))
            msgs.append({"role": "tool", "content": tool_json(r2, rng)})
        x1, x2 = fmt_answer(t1, a1, r1, rng), fmt_answer(t2, a2, r2, rng)
        msgs.append({"role": "assistant", "content": x1 + (" " if "\n" not in x1 else "\n") + x2})
        return True

    def episode_chain(self, tools_by_name, params, msgs):
        """Result of the first call is an argument of the second (weather -> convert_units)."""
        rng = self.rng
        city = self.ctx.city()
        target = rng.choice(["fahrenheit", "F", "kelvin"])
        q = rng.choice([f"What's the temperature in {city} in {target}?", f"How warm is it in {city}, in {target}?",
                        f"Tell me the weather in {city} but in {target}", f"weather in {city} in degrees {target}"])
        msgs.append({"role": "user", "content": noisy(q, rng, 0.5)})
        msgs.append(call_msg("get_weather", {"city": city}))
        res = {"temperature_c": rng.randint(-25, 42), "condition": rng.choice(CONDITIONS)}
        if rng.random() < 0.4:
            res = {"city": city, **res}
        msgs.append({"role": "tool", "content": tool_json(res, rng)})
        conv = ordered(params["convert_units"], {"value": res["temperature_c"], "from": "celsius", "to": target})
        msgs.append(call_msg("convert_units", conv))
        conv_v = round(res["temperature_c"] * 1.8 + 32, 1) if target != "kelvin" else round(res["temperature_c"] + 273.15, 2)
        # the converter's result alone, or echoed with its arguments as the demo page's tool does
        out = {"value": conv_v, "unit": target} if rng.random() < 0.5 else dict(conv, result=conv_v)
        msgs.append({"role": "tool", "content": tool_json(out, rng)})
        msgs.append({"role": "assistant", "content": rng.choice([
            f"It's {conv_v} {target} ({res['temperature_c']}°C) and {res['condition']} in {city}.",
            f"In {city} it is {res['condition']} and {conv_v} {target}."])})

    def conversation(self):
        rng = self.rng
        kind = rng.random()
        system = rng.choice(SYSTEMS) if rng.random() < 0.9 else "You are " + made_up(rng).capitalize() + ", an assistant for this site."
        if kind < 0.05:
            tools, rendered, params = self.toolset(must=[t for t in self.demo if t.name in ("get_weather", "convert_units")])
            msgs = [{"role": "system", "content": system}]
            self.episode_chain({t.name: t for t in tools}, params, msgs)
        else:
            tools, rendered, params = self.toolset()
            msgs = [{"role": "system", "content": system}]
            n_ep = rng.choice(self.EPISODES)
            for _ in range(n_ep):
                self.episode(tools, params, msgs)
        if rng.random() < 0.03:
            rendered = []
            msgs = [m for m in msgs[:1]]
            st = rng.choice([s for s in SMALLTALK if s[1]])
            msgs += [{"role": "user", "content": st[0]}, {"role": "assistant", "content": rng.choice(st[1])}]
        return msgs, rendered

    ABSENT_DEMO = 0.0  # share of absent-tool requests that ask for a demo tool (--composed)

    def absent_turn(self, names, msgs):
        """A request for a tool that is not in this prompt: say so, call nothing."""
        rng = self.rng
        absent_demo = [t for t in self.demo if t.name not in names]
        absent = [t for t in self.demo + self.catalogue if t.name not in names]
        t = rng.choice(absent_demo if absent_demo and self.ABSENT_DEMO and rng.random() < self.ABSENT_DEMO else absent)
        vals = tool_args(t, t.params, rng, self.ctx)
        msgs.append({"role": "user", "content": ask_text(t, vals, rng, self.asks_for(t))})
        msgs.append({"role": "assistant", "content": unavailable_answer(t, names, rng)})

    # episode mix: single call, two requests, a tool that is not there, small talk (missing argument: the rest)
    SHARES = (0.5, 0.62, 0.75, 0.9)

    def episode(self, tools, params, msgs):
        rng = self.rng
        k = rng.random()
        names = [t.name for t in tools]
        single, two, absent, talk = self.SHARES
        if k < single:
            t = rng.choice(tools)
            self.episode_call(t, params[t.name], msgs, error=rng.random() < 0.12)
        elif k < two and len(tools) >= 1:
            t1, t2 = rng.choice(tools), rng.choice(tools)
            if not self.episode_two(t1, t2, params, msgs):
                self.episode_call(t1, params[t1.name], msgs)
        elif k < absent:
            self.absent_turn(names, msgs)
        elif k < talk:
            st = rng.choice(SMALLTALK)
            text = noisy(st[0], rng, 0.7)
            if st[1] is None:
                if st[0] == "help":
                    ans = "I can help using these tools: " + ", ".join(names) + ". What would you like to do?"
                else:
                    ans = "2 plus 2 is 4."
            else:
                ans = rng.choice(st[1])
            if rng.random() < 0.2:
                text = rng.choice(["what can you do?", "What tools do you have?", "What can you help me with?"])
                ans = "I can use these tools: " + ", ".join(names) + "."
            msgs.append({"role": "user", "content": text})
            msgs.append({"role": "assistant", "content": ans})
        else:
            # a required argument is missing: ask, then call
            cands = [t for t in tools if any(p.req for p in params[t.name]) and t.name != "convert_units"]
            if not cands:
                t = rng.choice(tools)
                return self.episode_call(t, params[t.name], msgs)
            t = rng.choice(cands)
            p = [p for p in params[t.name] if p.req][0]
            vals = tool_args(t, params[t.name], rng, self.ctx)
            if len([q for q in params[t.name] if q.req]) > 1 or p.gen == "expr":
                return self.episode_call(t, params[t.name], msgs)
            generic = {"get_weather": ["What's the weather?", "weather please", "Is it raining?", "How's the weather today?"],
                       "get_time": ["What time is it?", "what's the time?", "Tell me the time"],
                       "add_note": ["Add a note", "Make a note", "take a note please"]}.get(t.name)
            if not generic:
                return self.episode_call(t, params[t.name], msgs)
            msgs.append({"role": "user", "content": noisy(rng.choice(generic), rng, 0.5)})
            msgs.append({"role": "assistant", "content": missing_arg_question(t, p)})
            msgs.append({"role": "user", "content": say(vals[p.name])})
            args = ordered(params[t.name], vals)
            msgs.append(call_msg(t.name, args))
            res = t.result(args, rng, self.ctx)
            msgs.append({"role": "tool", "content": tool_json(res, rng)})
            msgs.append({"role": "assistant", "content": fmt_answer(t, args, res, rng)})


# ----------------------------------------------------------------------------------------------------------
# copy-dense conversations (--copy): short prompts, several requests each, values the model cannot guess

class Guard:
    """Rejects values that share a word with the held-out evaluation arguments, so that data generated after
    out/eval.jsonl (which only excludes the names of its own seed-1 training run) never shows an eval entity."""

    def __init__(self, words):
        self.words = words

    @staticmethod
    def split(v):
        return [w for w in re.split(r"[^a-z0-9]+", str(v).lower()) if len(w) >= 4]

    def ok(self, v):
        return not any(w in self.words for w in self.split(v))

    def __contains__(self, v):
        # lets Ctx use a Guard as its `exclude` set for made-up places
        return not self.ok(v)


def eval_guard():
    common = {w.lower() for w in WORDS + PRODUCTS + NOTE_STARTS + FIRST + LAST + SYL_A}
    words = set()
    for line in open(OUT / "eval.jsonl"):
        c = json.loads(line)
        for v in c["expect"].get("arguments", {}).values():
            if isinstance(v, str):
                words.update(w for w in Guard.split(v) if w not in common)
    words.update(w for pair in EVAL_UNITS for u in pair for w in Guard.split(u))
    return Guard(words)


def recase(w, rng):
    r = rng.random()
    if r < 0.55:
        return w.capitalize()
    if r < 0.7:
        return w
    if r < 0.8:
        return w.upper()
    i = rng.randrange(1, len(w)) if len(w) > 1 else 0
    return w[:i].capitalize() + w[i:].capitalize()


_PIECES = []


def vocab_word(rng):
    """A made-up word of 1-3 letter-only pieces of the tokenizer's vocabulary, drawn uniformly: natural text
    leaves hundreds of the 2,048 tokens (`ard`, `bl`, `ight`...) rare or unseen, and a name or unit made of
    them could not be copied. Used only with --vocab-words."""
    if not _PIECES:
        vocab = json.load(open(OUT / "tokenizer.json", encoding="utf-8"))["model"]["vocab"]
        _PIECES.extend(sorted(t for t in vocab if t.isascii() and t.isalpha()))
    return "".join(rng.choice(_PIECES) for _ in range(rng.choice([1, 2, 2, 3])))


VOCAB_WORDS = 0.0  # share of made-up words taken from vocab_word (--vocab-words)


def wild_word(rng, syl):
    return vocab_word(rng) if VOCAB_WORDS and rng.random() < VOCAB_WORDS else made_up(rng, syl)


def wild_name(rng):
    """1-3 made-up words of 1-5 syllables, mixed case, sometimes with digits, a hyphen or an apostrophe."""
    words = [recase(wild_word(rng, rng.choice([1, 2, 3, 3, 4, 5])), rng) for _ in range(rng.choice([1, 1, 2, 2, 3]))]
    r = rng.random()
    if r < 0.15:
        words.append(str(rng.randint(1, 9999)))
    elif r < 0.25:
        return "-".join(words)
    elif r < 0.3:
        words[0] = rng.choice(["O'", "d'", "L'"]) + words[0]
    return " ".join(words)


def wild_number(rng):
    r = rng.random()
    if r < 0.4:
        return rng.randint(0, 10 ** rng.randint(1, 7))
    v = round(rng.uniform(0, 10 ** rng.randint(1, 5)), rng.randint(1, 4))
    return v if v != int(v) else int(v)


def wild_expr(rng):
    n = lambda: str(wild_number(rng))
    parts = [n()]
    for _ in range(rng.randint(1, 4)):
        parts += [rng.choice(["+", "-", "*", "/", "%", "^"]), n()]
    if len(parts) > 3 and rng.random() < 0.4:
        i = rng.randrange(0, len(parts) - 2, 2)
        parts[i], parts[i + 2] = "(" + parts[i], parts[i + 2] + ")"
    return ("" if rng.random() < 0.3 else " ").join(parts)


def wild_text(rng):
    pick = lambda: rng.choice([rng.choice(WORDS + PRODUCTS + NOTE_STARTS), wild_word(rng, None), wild_name(rng),
                               str(wild_number(rng)), "#" + str(rng.randint(1, 999)), rng.choice(FIRST)])
    words = [pick() for _ in range(rng.randint(2, 8))]
    if len(words) > 2 and rng.random() < 0.4:
        i = rng.randrange(1, len(words))
        words[i - 1] += rng.choice([",", ":", " -", ";"])
    return " ".join(words)


def wild_unit(rng):
    return wild_word(rng, rng.choice([1, 2, 2, 3])) + rng.choice(["", "", "s", "s"])


class CopyCtx(Ctx):
    """Entity pools of the copy mode: a quarter real training cities, the rest made-up, all passed by the Guard."""

    def __init__(self, rng, cities, guard):
        super().__init__(rng, cities, None, set())
        self.guard = guard
        self.units = UNITS

    def fresh(self, gen):
        while True:
            v = gen()
            if self.guard.ok(v):
                return v

    def city(self):
        rng = self.rng
        r = rng.random()
        if r < 0.25:
            c = rng.choice(self.cities)
        elif r < 0.55:
            c = self.fresh(lambda: made_up_place(rng))
        else:
            c = self.fresh(lambda: wild_name(rng))
        return c.lower() if rng.random() < 0.06 else c

    def person(self):
        return self.fresh(lambda: wild_name(self.rng))


def hard_gen(p):
    """The copy-mode generator for a parameter (None: keep the normal value, e.g. enums and booleans)."""
    if p.gen == "expr":
        return lambda rng, ctx: wild_expr(rng)
    if p.gen in ("text", "query"):
        return lambda rng, ctx: ctx.fresh(lambda: wild_text(rng))
    if p.type == "number" and p.gen == "num":
        return lambda rng, ctx: wild_number(rng)
    if p.type == "integer":
        return lambda rng, ctx: rng.randint(0, 10 ** rng.randint(1, 6))
    if p.type == "string" and not p.enum and p.gen in ("city", "person", "word", "product", "song"):
        return lambda rng, ctx: ctx.fresh(lambda: wild_name(rng))
    return None


REPEAT_ASKS = ["Repeat exactly: {v}", "Say \"{v}\"", "Please repeat this back: {v}", "echo {v}",
               "Copy this text: {v}", "Write {v}", "Can you repeat {v}?", "Type {v} for me."]


class CopyBuilder(Builder):
    """Short prompts (1-2 tools, short system text), 2-4 requests per conversation, most values made hard to
    guess so that only copying from the user message or the tool result lowers the loss."""

    def __init__(self, rng, ctx, demo, catalogue, proc_fn):
        super().__init__(rng, ctx, demo, catalogue, proc_fn)
        # catalogue tools whose values are mostly free text or names
        self.copyable = [t for t in catalogue if any(hard_gen(p) for p in t.params)]

    def copy_args(self, tool, params):
        vals = tool_args(tool, params, self.rng, self.ctx)
        for p in tool.params:
            gen = hard_gen(p)
            if p.name in vals and gen and self.rng.random() < 0.75:
                vals[p.name] = gen(self.rng, self.ctx)
        if tool.name == "convert_units" and self.rng.random() < 0.3:
            vals["from"], vals["to"] = self.ctx.fresh(lambda: wild_unit(self.rng)), self.ctx.fresh(lambda: wild_unit(self.rng))
        return vals

    ABSENT_TURNS = 0.0  # share of turns asking for a tool that is not in the prompt (--composed)
    REPEAT = 0.0  # share of tool-less conversations made only of repeat-back turns (the densest copy signal)

    def repeat_turn(self, msgs):
        rng = self.rng
        v = self.ctx.fresh(lambda: rng.choice([wild_name, wild_text, wild_expr])(rng))
        msgs.append({"role": "user", "content": rng.choice(REPEAT_ASKS).replace("{v}", str(v))})
        msgs.append({"role": "assistant", "content": str(v)})

    def conversation(self):
        rng = self.rng
        if rng.random() < self.REPEAT:
            msgs = [{"role": "system", "content": rng.choice(SYSTEMS[:5])}] if rng.random() < 0.3 else []
            for _ in range(rng.randint(2, 6)):
                self.repeat_turn(msgs)
            return msgs, []
        pool = [t for t in self.demo if t.name != "list_notes"] if rng.random() < 0.75 else self.copyable
        tools = rng.sample(pool, rng.choice([1, 1, 2]))
        if rng.random() < 0.1:
            tools.append(rng.choice(self.demo))
        tools = list({t.name: t for t in tools}.values())
        rendered, params = [], {}
        for t in tools:
            ps, s = t.schema(rng)
            rendered.append(s)
            params[t.name] = ps
        msgs = [{"role": "system", "content": rng.choice(SYSTEMS[:5])}] if rng.random() < 0.7 else []
        for _ in range(rng.choice([1, 2, 2, 3])):
            r = rng.random()
            if r < 0.1:
                self.repeat_turn(msgs)
                continue
            if r < 0.1 + self.ABSENT_TURNS:
                self.absent_turn([x.name for x in tools], msgs)
                continue
            t = rng.choice(tools)
            vals = self.copy_args(t, params[t.name])
            args = ordered(params[t.name], vals)
            msgs.append({"role": "user", "content": ask_text(t, vals, rng, self.asks_for(t), 0.5)})
            msgs.append(call_msg(t.name, args))
            if t.name == "list_notes":
                res = {"notes": [self.ctx.fresh(lambda: wild_text(rng)) for _ in range(rng.randint(1, 3))]}
            else:
                res = t.result(args, rng, self.ctx)
            msgs.append({"role": "tool", "content": tool_json(res, rng)})
            msgs.append({"role": "assistant", "content": fmt_answer(t, args, res, rng)})
        return msgs, rendered


# ----------------------------------------------------------------------------------------------------------
# evaluation cases

def eval_cases(rng, ctx, demo, catalogue, held, proc_fn, n_per=25):
    """Each case: {"group", "kind", "messages", "tools", "expect"}. kinds: call (expect name+arguments),
    no_call, answer (expect strings that must appear), error (expect no invented call/value)."""
    B = Builder(rng, ctx, demo, catalogue, proc_fn, eval_mode=True)
    cases = []

    def toolset_with(t, others_from):
        n = rng.randint(0, 4)
        others = [x for x in rng.sample(others_from, min(len(others_from), n)) if x.name != t.name]
        tools = [t] + others
        rng.shuffle(tools)
        rendered, params = [], {}
        for x in tools:
            ps, s = x.schema(rng)
            rendered.append(s)
            params[x.name] = ps
        return tools, rendered, params

    def add_call(group, t, others_from, asks):
        tools, rendered, params = toolset_with(t, others_from)
        vals = tool_args(t, params[t.name], rng, ctx)
        args = ordered(params[t.name], vals)
        user = ask_text(t, vals, rng, asks, 0.6)
        msgs = [{"role": "system", "content": rng.choice(EVAL_SYSTEMS)}, {"role": "user", "content": user}]
        cases.append({"group": group, "kind": "call", "messages": msgs, "tools": rendered,
                      "expect": {"name": t.name, "arguments": args}})
        return tools, rendered, params, msgs, args

    for t in demo:
        for _ in range(n_per):
            tools, rendered, params, msgs, args = add_call("demo", t, demo + catalogue, EVAL_ASKS[t.name])
        for _ in range(6):
            # answer must use the tool result
            tools, rendered, params, msgs, args = add_call("demo-answer", t, demo, EVAL_ASKS[t.name])
            cases.pop()
            res = t.result(args, rng, ctx)
            if t.name == "get_weather":
                res = {"temperature_c": rng.randint(-25, 42), "condition": rng.choice(CONDITIONS)}
            if t.name == "list_notes":
                res = {"notes": [note_text(rng) for _ in range(rng.randint(1, 3))]}
            m2 = msgs + [call_msg(t.name, args), {"role": "tool", "content": tool_json(res, rng)}]
            must = [say(v) for k, v in res.items() if k in ("temperature_c", "condition", "time", "result", "value", "id") and k != "id"]
            if t.name == "list_notes":
                must = res["notes"]
            if t.name == "add_note":
                must = [args["text"]]
            cases.append({"group": "demo", "kind": "answer", "messages": m2, "tools": rendered, "expect": {"contains": must}})
        for _ in range(3):
            tools, rendered, params, msgs, args = add_call("demo", t, demo, EVAL_ASKS[t.name])
            cases.pop()
            err = rng.choice(t.errors)
            try:
                err = err.format(**{k: say(v) for k, v in args.items()})
            except KeyError:
                pass
            m2 = msgs + [call_msg(t.name, args), {"role": "tool", "content": tool_json({"error": err}, rng)}]
            cases.append({"group": "demo", "kind": "error", "messages": m2, "tools": rendered, "expect": {}})
    # no tool needed
    for s in EVAL_SMALLTALK:
        tools, rendered, params = toolset_with(rng.choice(demo), demo)
        cases.append({"group": "demo", "kind": "no_call", "messages": [{"role": "system", "content": rng.choice(EVAL_SYSTEMS)},
                                                                        {"role": "user", "content": s}], "tools": rendered, "expect": {}})
    # tool not registered in this prompt
    for _ in range(30):
        t = rng.choice(demo)
        others = [x for x in demo + catalogue if x.name != t.name]
        tools = rng.sample(others, rng.randint(1, 4))
        rendered = [x.schema(rng)[1] for x in tools]
        vals = tool_args(t, t.params, rng, ctx)
        cases.append({"group": "demo", "kind": "no_call", "messages": [{"role": "system", "content": rng.choice(EVAL_SYSTEMS)},
                                                                        {"role": "user", "content": ask_text(t, vals, rng, EVAL_ASKS[t.name], 0.5)}],
                      "tools": rendered, "expect": {"absent_tool": t.name}})
    # multi-step: second call after the first result
    for _ in range(20):
        w = demo[0]
        tm = demo[1]
        tools, rendered, params = toolset_with(w, [tm] + demo[2:])
        if "get_time" not in params:
            ps, s = tm.schema(rng)
            rendered.append(s)
            params["get_time"] = ps
        c1, c2 = ctx.city(), ctx.city()
        user = rng.choice([f"Weather in {c1} and the time in {c2}?", f"What's the weather in {c1}? And what time is it in {c2}?",
                           f"Check the weather in {c1}, then tell me the time in {c2}."])
        res = {"temperature_c": rng.randint(-25, 42), "condition": rng.choice(CONDITIONS)}
        msgs = [{"role": "system", "content": rng.choice(EVAL_SYSTEMS)}, {"role": "user", "content": user},
                call_msg("get_weather", {"city": c1}), {"role": "tool", "content": tool_json(res, rng)}]
        cases.append({"group": "demo", "kind": "call", "messages": msgs, "tools": rendered,
                      "expect": {"name": "get_time", "arguments": {"city": c2}}, "step": 2})
    # unseen tools
    for t in held:
        for _ in range(12):
            add_call("unseen", t, demo + catalogue, t.asks)
        for _ in range(3):
            tools, rendered, params, msgs, args = add_call("unseen-answer", t, demo, t.asks)
            cases.pop()
            res = t.result(args, rng, ctx)
            m2 = msgs + [call_msg(t.name, args), {"role": "tool", "content": tool_json(res, rng)}]
            cases.append({"group": "unseen", "kind": "answer", "messages": m2, "tools": rendered,
                          "expect": {"contains": [say(v) for v in res.values()][:1]}})
    for _ in range(40):
        t = proc_fn()
        add_call("unseen-procedural", t, demo + catalogue, t.asks)
    return cases


# ----------------------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", type=int, default=60000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--focus", action="store_true",
                    help="phase-2 mix: shorter prompts (1-5 tools), 65%% demo tools, 1-2 episodes")
    ap.add_argument("--name", default="train", help="output name: out/NAME.jsonl")
    ap.add_argument("--copy", type=float, default=0.0,
                    help="fraction of copy-dense conversations; keeps the existing out/eval.jsonl and keeps its "
                         "entities and procedural tools out of the new data")
    ap.add_argument("--repeat", type=float, default=0.0,
                    help="share of the copy-mode conversations that are tool-less repeat-back drills")
    ap.add_argument("--composed", type=float, default=0.0,
                    help="share of demo-tool requests worded by phrasing.compose; also more two-request and "
                         "absent-tool episodes and more ways to join two requests")
    ap.add_argument("--vocab-words", type=float, default=0.0,
                    help="share of the copy mode's made-up words built from random vocabulary pieces")
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    global VOCAB_WORDS
    VOCAB_WORDS = args.vocab_words

    split_rng = random.Random(1234)
    cities = REAL_CITIES[:]
    split_rng.shuffle(cities)
    n_eval = len(cities) // 5
    eval_cities, train_cities = cities[:n_eval], cities[n_eval:]

    rng = random.Random(args.seed)
    seen_names = set()
    guard = eval_guard() if args.copy else set()
    ctx = Ctx(rng, train_cities, seen_names, guard)
    ctx.units = UNITS
    demo, cat, held = demo_tools(), catalogue_tools(), held_out_tools()
    held_names = {t.name for t in held}
    proc_taken = {t.name for t in demo + cat} | held_names
    if args.copy:
        proc_taken |= {s["function"]["name"] for l in open(OUT / "eval.jsonl") for s in json.loads(l)["tools"]}
    proc_names = set()

    def proc():
        t = procedural_tool(rng, ctx, proc_taken)
        proc_names.add(t.name)
        return t

    b = Builder(rng, ctx, demo, cat, proc)
    if args.focus:
        b.NTOOLS, b.MIX, b.EPISODES = [1, 2, 2, 3, 3, 4, 5], (0.65, 0.85), [1, 1, 1, 2]
    cb = CopyBuilder(rng, CopyCtx(rng, train_cities, guard), demo, cat, proc) if args.copy else None
    if cb:
        cb.REPEAT = args.repeat
    if args.composed:
        for x in filter(None, (b, cb)):
            x.COMPOSED, x.JOINS, x.SHARES = args.composed, x.JOINS + x.MORE_JOINS, (0.42, 0.62, 0.8, 0.9)
            x.ABSENT_DEMO = 0.6
        if cb:
            cb.ABSENT_TURNS = 0.12
    n_chars = 0
    with open(OUT / f"{args.name}.jsonl", "w") as f:
        for i in range(args.train):
            msgs, rendered = (cb if rng.random() < args.copy else b).conversation()
            text = render(msgs, rendered)
            n_chars += len(text)
            f.write(json.dumps({"messages": msgs, "tools": rendered, "text": text}, ensure_ascii=False) + "\n")
    print(f"train: {args.train} conversations, {n_chars} characters, {len(seen_names)} made-up places, "
          f"{len(proc_names)} procedural tools")
    if args.copy:
        return

    erng = random.Random(args.seed + 1000)
    ectx = Ctx(erng, eval_cities, None, seen_names)
    ectx.units = EVAL_UNITS + UNITS[:6]
    eproc = lambda: procedural_tool(erng, ectx, proc_taken | proc_names)
    cases = eval_cases(erng, ectx, demo, cat, held, eproc)
    # held-out phrasing check: no eval user message appears verbatim in training
    with open(OUT / "eval.jsonl", "w") as f:
        for c in cases:
            c["prompt"] = render(c["messages"], c["tools"], add_generation_prompt=True)
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    from collections import Counter
    print("eval:", len(cases), Counter((c["group"], c["kind"]) for c in cases))


if __name__ == "__main__":
    main()
