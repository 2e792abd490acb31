"""The tool bank (toolbank.txt): tool families as pages register them, with the wordings, results and answers
the data generator draws from, and the value pools their arguments come from.

    python3 tools/agent/bank.py        # validates the bank and prints its counts

Format of a family (see toolbank.txt):
    family NAME
    tool NAME: description
      param NAME: TYPE[!] {KIND} - description      TYPE: string | integer | number | boolean | enum[a, b] | array<string>
      say: a request phrase with {param} slots       ({flag=true} sets a boolean and renders as nothing)
      result: JSON with {KIND}, {int:A-B} and {$param} placeholders
      answer: a sentence with {result field} and {param} slots
      error: a failure message ({param} slots allowed)
"""
import json
import pathlib
import random
import re
import sys
from dataclasses import dataclass, field

HERE = pathlib.Path(__file__).resolve().parent
SLOT = re.compile(r"\{(\$?[A-Za-z_][A-Za-z0-9_]*(?::-?[0-9.]+--?[0-9.]+)?)(=(?:true|false))?\}")


@dataclass
class Param:
    name: str
    type: str
    required: bool
    kind: str | None
    enum: list | None
    description: str


@dataclass
class Tool:
    family: str
    name: str
    description: str
    params: list = field(default_factory=list)
    says: list = field(default_factory=list)
    result: str = "{}"
    answers: list = field(default_factory=list)
    errors: list = field(default_factory=list)

    def schema(self):
        props = {}
        for p in self.params:
            if p.type == "enum":
                s = {"type": "string", "enum": list(p.enum)}
            elif p.type == "array":
                s = {"type": "array", "items": {"type": "string"}}
            else:
                s = {"type": p.type}
            if p.description:
                s["description"] = p.description
            props[p.name] = s
        return {"type": "function", "function": {
            "name": self.name, "description": self.description,
            "parameters": {"type": "object", "properties": props,
                           "required": [p.name for p in self.params if p.required]}}}


@dataclass
class Family:
    name: str
    tools: list


def _words(s):
    return [w.strip() for w in s.split("|")]


FIRST = ["Anna", "Ben", "Carla", "David", "Emma", "Felix", "Grace", "Hugo", "Inès", "Jack", "Kira", "Liam", "Mia",
         "Noah", "Olga", "Pablo", "Rosa", "Sam", "Tara", "Umar", "Yusuf", "Zoë", "Aiko", "Björn", "Chen", "Dmitri",
         "Elif", "Fatima", "Goran", "Hana", "Kofi", "Lena", "Marco", "Nadia", "Priya", "Ravi", "Sofía", "Tomás",
         "Vikram", "Wen", "Zainab", "Aoife", "Søren", "Łukasz", "Chloé", "Mateo", "Ngozi", "Kenji", "Amélie"]
LAST = ["Smith", "García", "Müller", "Rossi", "Novák", "Kowalski", "Tanaka", "Kim", "Chen", "Patel", "Okafor",
        "Silva", "Dubois", "Jensen", "Nguyễn", "Haddad", "Costa", "Schmidt", "López", "Weber", "Moreau", "Berg",
        "Sato", "Park", "Singh", "Mensah", "Santos", "O'Brien", "Álvarez", "Øvergaard", "Yılmaz", "Kovačević"]

POOLS = {
    "first_name": FIRST,
    "city": ["Paris", "London", "Tokyo", "São Paulo", "Kraków", "Zürich", "Reykjavík", "Berlin", "Madrid", "Lisbon",
             "Montréal", "Seattle", "Nairobi", "Osaka", "Málaga", "Göteborg", "Austin", "Mumbai", "Cairo", "Lima",
             "Toronto", "Dublin", "Oslo", "Vienna", "Prague", "Athens", "Seoul", "Hanoi", "Bogotá", "Sydney",
             "Auckland", "Marrakesh", "Istanbul", "Bordeaux", "Kyiv", "Tbilisi", "Porto", "Düsseldorf", "Ljubljana",
             "Cape Town", "Denver", "Chicago", "Edinburgh", "Valparaíso", "Thessaloniki", "Brno", "Gdańsk"],
    "country": ["France", "Japan", "Brazil", "Canada", "Kenya", "Norway", "Peru", "Vietnam", "Mexico", "Portugal",
                "Iceland", "Türkiye", "Germany", "India", "Chile", "Egypt", "Poland", "Spain", "Australia"],
    "address": ["12 Rue de Rivoli, Paris", "221B Baker Street, London", "Calle Mayor 5, Madrid",
                "1600 Amphitheatre Parkway", "Hauptstraße 17, Köln", "45 King St W, Toronto", "Via Roma 8, Torino",
                "3-1-1 Marunouchi, Tokyo", "Rua Augusta 200, Lisboa", "88 Queen's Road, Hong Kong"],
    "email": ["anna.muller@example.com", "j.garcia@mail.es", "kofi@mensah.dev", "team@acme.io",
              "zoe.okafor@uni.edu", "sales@brightshop.com", "lukasz.novak@firma.pl", "hana.sato@example.jp",
              "support@widgets.co", "ravi.patel@outlook.com", "chloe@dubois.fr", "ops@northwind.org"],
    "phone": ["+44 20 7946 0958", "+1 415 555 0132", "+49 30 901820", "+33 1 42 68 53 00", "+81 3-1234-5678",
              "+34 912 345 678", "+1 212 555 0198", "+61 2 9876 5432"],
    "url": ["https://example.com/pricing", "https://news.ycombinator.com", "https://github.com/acme/web-app",
            "https://en.wikipedia.org/wiki/Kraków", "https://shop.example.org/cart?id=42", "https://docs.rs/serde",
            "https://www.bbc.co.uk/news", "https://maps.example.com/route/17", "https://blog.acme.io/2026/launch"],
    "domain": ["example.com", "acme.io", "wikipedia.org", "github.com", "mozilla.org", "brightshop.com",
               "northwind.org", "weather.gov"],
    "ticker": ["AAPL", "MSFT", "TSLA", "NVDA", "AMZN", "GOOGL", "ASML", "SAP", "TM", "BABA", "SHOP", "NFLX"],
    "company": ["Acme Corp", "Northwind", "Globex", "Initech", "Umbrella Labs", "Stark Industries", "Wayne Enterprises",
                "Soylent", "Hooli", "Pied Piper", "Müller & Söhne", "Café Lumière"],
    "product": ["wireless mouse", "USB-C cable", "standing desk", "noise-cancelling headphones", "yoga mat",
                "espresso machine", "running shoes", "4K monitor", "mechanical keyboard", "water bottle",
                "air fryer", "winter jacket", "phone case", "desk lamp", "backpack", "electric kettle",
                "bluetooth speaker", "hiking boots", "office chair", "smartwatch"],
    "price": [9.99, 19.99, 25, 49.5, 80, 120, 199, 250, 349.99, 600, 1200, 15, 35, 75],
    "currency": ["USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "SEK", "PLN", "BRL", "INR", "MXN"],
    "date": ["2026-03-14", "2026-12-24", "2027-01-05", "2026-07-01", "2026-11-30", "2027-02-14", "2026-09-09",
             "2026-10-31", "2027-04-18", "2026-08-21"],
    "weekday": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
    "time": ["09:00", "14:30", "07:45", "18:15", "12:00", "21:30", "08:20", "16:00", "10:10", "19:45"],
    "duration_min": [5, 10, 15, 20, 25, 30, 45, 60, 90, 120],
    "quantity": [1, 2, 3, 4, 5, 6, 8, 10, 12],
    "rating": [1, 2, 3, 4, 5],
    "percent": [5, 10, 15, 20, 25, 30, 40, 50, 75],
    "temperature": [16, 18, 19, 20, 21, 22, 23, 24, 25],
    "distance_km": [1.5, 3, 5, 7.5, 10, 12, 21.1, 42.2, 80, 250],
    "airport": ["JFK", "LHR", "CDG", "NRT", "GRU", "ZRH", "KEF", "MAD", "LIS", "SFO", "AMS", "FRA", "DXB", "SIN"],
    "airline": ["Lufthansa", "Air France", "KLM", "Iberia", "Delta", "Qantas", "Emirates", "Icelandair", "LATAM"],
    "flight_no": ["LH 400", "AF 1234", "KL 641", "BA 117", "DL 45", "QF 1", "EK 202", "FI 615", "IB 3170"],
    "hotel": ["Hotel Adlon", "The Savoy", "Hôtel du Louvre", "Park Hyatt Tokyo", "Copacabana Palace", "Hotel Sacher",
              "Ace Hotel", "Generator Hostel", "Hotel Borg"],
    "restaurant": ["Noma", "Chez Janou", "Sushi Saito", "Osteria Francescana", "Dishoom", "Café de Flore",
                   "Taquería El Güero", "Le Comptoir", "Pizzeria Da Michele", "Kebab Ünal"],
    "cuisine": ["italian", "japanese", "mexican", "indian", "thai", "french", "vegan", "korean", "lebanese"],
    "dish": ["pad thai", "risotto", "lasagna", "ramen", "shakshuka", "paella", "chili con carne", "banana bread",
             "crème brûlée", "pho", "falafel", "pierogi"],
    "ingredient": ["chickpeas", "spinach", "tofu", "salmon", "mushrooms", "basil", "lentils", "feta", "eggs"],
    "song": ["Bohemian Rhapsody", "Clair de Lune", "Blinding Lights", "Hey Jude", "Despacito", "Jolene",
             "La Vie en rose", "Smells Like Teen Spirit", "Dancing Queen", "Hallelujah"],
    "artist": ["Björk", "Beyoncé", "Radiohead", "Stromae", "Taylor Swift", "Miles Davis", "Rosalía", "ABBA",
               "Sigur Rós", "Ludovico Einaudi", "Fela Kuti"],
    "album": ["OK Computer", "Kind of Blue", "Abbey Road", "Random Access Memories", "Motomami", "Homogenic"],
    "playlist": ["Morning Focus", "Road Trip", "Chill Vibes", "Workout Mix", "Sunday Jazz", "Throwbacks"],
    "podcast": ["The Daily", "Hardcore History", "Radiolab", "99% Invisible", "Lex Fridman Podcast", "Reply All"],
    "movie": ["Spirited Away", "Amélie", "The Matrix", "Parasite", "Inception", "Cidade de Deus", "Alien", "Up"],
    "book": ["Dune", "Pride and Prejudice", "Cien años de soledad", "The Hobbit", "Norwegian Wood", "Beloved",
             "Le Petit Prince", "Sapiens"],
    "author": ["Toni Morrison", "Haruki Murakami", "Gabriel García Márquez", "Jane Austen", "Ursula K. Le Guin",
               "Chimamanda Ngozi Adichie", "Italo Calvino"],
    "language": ["Spanish", "French", "German", "Japanese", "Portuguese", "Italian", "Korean", "Polish",
                 "Turkish", "Swahili", "Dutch"],
    "text": ["Running 10 minutes late", "Can we move the call to 3pm?", "Happy birthday! 🎉", "Don't forget the milk",
             "The build is green again", "See you at the station", "Thanks for dinner last night",
             "Meeting notes are in the shared folder", "Call the plumber about the leak", "Pick up Zoë at 5",
             "Buy batteries for the smoke alarm", "Ask Łukasz about the invoice"],
    "subject": ["Quarterly report", "Invoice #4471", "Lunch on Friday?", "Re: project timeline", "Welcome aboard",
                "Your order has shipped", "Vacation request", "Updated contract draft"],
    "title": ["Team sync", "Dentist", "Flight to Lisbon", "Sprint review", "Yoga class", "Parent-teacher meeting",
              "Budget planning", "Coffee with Aoife", "Quarterly review"],
    "filename": ["report-2026.pdf", "budget.xlsx", "notes.txt", "IMG_2041.jpg", "slides_final_v3.pptx",
                 "contract_signed.pdf", "résumé.docx", "data.csv"],
    "folder": ["Documents", "Invoices", "Photos/2026", "Projects/Apollo", "Downloads", "Shared/Marketing"],
    "repo": ["acme/web-app", "octocat/hello-world", "rust-lang/cargo", "northwind/api", "me/dotfiles"],
    "branch": ["main", "develop", "feature/login", "fix/crash-on-save", "release/2.4"],
    "issue_no": [17, 42, 128, 311, 1024, 7, 88],
    "tag": ["urgent", "work", "personal", "bug", "ideas", "travel", "finance", "later"],
    "room": ["living room", "kitchen", "bedroom", "office", "garage", "bathroom", "hallway", "kids' room"],
    "device": ["lights", "heater", "fan", "TV", "speaker", "air purifier", "coffee maker", "blinds"],
    "color": ["red", "warm white", "blue", "green", "purple", "orange", "cool white"],
    "team": ["Arsenal", "Real Madrid", "Boca Juniors", "Lakers", "Yankees", "Bayern München", "Galatasaray",
             "Celtics", "Flamengo"],
    "sport": ["football", "basketball", "tennis", "cricket", "baseball", "hockey", "rugby", "volleyball"],
    "event": ["Coldplay concert", "Hamilton", "Champions League final", "jazz festival", "comedy night",
              "Swan Lake", "tech meetup", "food market"],
    "tracking_no": ["1Z999AA10123456784", "JD014600006281230", "LX123456789DE", "9400111899223397658",
                    "CP987654321FR"],
    "order_id": ["A-10023", "ORD-58817", "#77120", "SO-2026-0412", "B7-4409"],
    "account": ["checking", "savings", "joint account", "business account", "credit card"],
    "amount": [20, 45.5, 100, 250, 1200, 75, 18.9, 500, 3000, 9.99],
    "crypto": ["BTC", "ETH", "SOL", "ADA", "DOGE", "XRP"],
    "medication": ["ibuprofen", "amoxicillin", "vitamin D", "metformin", "loratadine", "paracetamol"],
    "doctor": ["Dr. Okafor", "Dr. Müller", "Dr. García", "Dr. Tanaka", "Dr. Novák", "Dr. Haddad"],
    "pet_name": ["Luna", "Max", "Bella", "Milo", "Coco", "Simba", "Nala", "Ziggy"],
    "plant": ["tomatoes", "basil", "roses", "monstera", "lavender", "strawberries", "ficus", "orchid"],
    "car_model": ["Tesla Model 3", "VW Golf", "Toyota Corolla", "Renault Zoe", "Ford F-150", "Škoda Octavia"],
    "license_plate": ["AB12 CDE", "B-MW 2041", "7XYZ123", "GE-123-AB", "KA 01 AB 1234"],
    "course": ["Intro to Python", "Linear Algebra", "Spanish A2", "Art History 101", "Data Structures"],
    "job_title": ["frontend developer", "nurse", "data analyst", "product designer", "sales manager", "teacher"],
    "skill": ["React", "SQL", "Figma", "Kubernetes", "copywriting", "Excel", "Rust"],
    "word": ["serendipity", "ephemeral", "ubiquitous", "saudade", "hygge", "melancholy", "resilience", "zeitgeist"],
    "username": ["@zoe_codes", "@bjork_fan", "@acme_support", "@lukasz.dev", "@chef_mateo", "@ravi_runs"],
    "hashtag": ["#travel", "#foodie", "#100DaysOfCode", "#sunset", "#mondaymotivation", "#rustlang"],
    "selector": ["#signup-email", ".btn-primary", "#search", "input[name=q]", "#checkout-button", "nav a.active"],
    "tab_title": ["Inbox", "Google Docs", "YouTube", "Pull request #42", "Weather", "Flights to Lisbon"],
    "field_name": ["email", "first name", "phone", "postcode", "company", "message"],
    "url_path": ["/settings", "/pricing", "/blog", "/account/orders", "/help/contact", "/docs/getting-started"],
    "coupon": ["SAVE10", "WELCOME2026", "BLACKFRIDAY", "FREESHIP", "SPRING-15", "VIP50"],
    "ship_status": ["in transit", "out for delivery", "delivered", "processing", "held at customs"],
    "event_id": ["evt_82KQ", "evt_19ZA", "n-5521", "grp_77x", "p-4410", "alb_0931"],
    "message_id": ["msg_8841a", "msg_19c2f", "d-20931", "msg_77e0b"],
    "lat": [48.8606, 51.5237, 35.6812, -23.5505, 50.0614, 47.3769, 64.1466],
    "lon": [2.3376, -0.1585, 139.7671, -46.6333, 19.9366, 8.5417, -21.9426],
    "booking_ref": ["K7Q2XZ", "PNR4481", "BK-90311", "ZX81LM", "R2D2C3", "HTL-5521"],
    "flight_state": ["on time", "delayed 40 minutes", "boarding", "landed", "cancelled"],
    "gate": ["A12", "B7", "C33", "D4", "E19"],
    "clock": ["3:42", "4:05", "2:58", "6:11", "5:20"],
    "score": [6.8, 7.4, 8.1, 8.6, 9.0, 4.5],
    "year": [1999, 2001, 2010, 2019, 2023, 2025, 1985],
    "wash_temp": [30, 40, 60, 90],
    "oven_temp": [160, 180, 200, 220, 250],
    "sha": ["a1b2c3d", "9f8e7d6", "4c0ffee", "deadbe1", "77aa3b2"],
    "weight": [0.5, 1.2, 2, 3.5, 5, 10, 23],
    "ticket_state": ["open", "waiting on customer", "resolved", "escalated"],
    "match_score": ["2-1", "0-0", "3-2", "105-99", "1-4", "7-3"],
    "photo_subject": ["the beach", "my dog", "Christmas", "mountains", "the wedding", "sunsets", "grandma"],
    "letter_grade": ["A", "A-", "B+", "B", "C+"],
    "bike_id": ["B-4471", "77120", "EB-209", "K-3310"],
    "rate": [0.92, 1.08, 1.27, 148.3, 0.79, 5.43, 17.1],
    "condition_word": ["sunny", "rainy", "cloudy", "stormy", "snowy", "mild and dry"],
    "aqi_level": ["good", "moderate", "unhealthy", "very unhealthy"],
    "bool": [True, False],
    "passport": ["X1234567", "P98765432", "C01X00T47", "533380006"],
    "poll_question": ["Where should we eat?", "Best day for the offsite?", "Pizza or sushi?",
                      "Which day works for the meeting?"],
    "sleep_hours": [5.5, 6, 6.5, 7, 7.5, 8, 8.5],
    "dice_sides": [4, 6, 8, 10, 12, 20],
    "coin_side": ["heads", "tails"],
    "sunlight": ["full sun", "bright indirect light", "partial shade"],
    "query": ["cheap flights", "vegan recipes", "rust async tutorial", "best hiking trails", "tax deadline 2026",
              "how to fix a leaking tap", "jazz bars nearby"],
    "category": ["groceries", "rent", "transport", "entertainment", "utilities", "eating out", "health"],
    "version": ["1.4.2", "2.0.0", "0.9.13", "3.11.1", "5.2.0-beta.1", "18.3.1", "0.4.0"],
    "package": ["serde", "tokio", "react", "lodash", "requests", "numpy", "left-pad", "express"],
    "service": ["checkout-api", "auth-service", "web-frontend", "payments-worker", "search-indexer",
                "email-sender"],
    "feature_flag": ["new-checkout", "dark-mode", "beta-search", "ai-summary", "fast-login", "holiday-banner"],
    "image_ref": ["acme/web:2.4.1", "nginx:1.27", "postgres:16", "redis:7-alpine", "ghcr.io/acme/api:latest"],
    "ssid": ["HomeNet", "Café-Guest", "Büro 5G", "Casa_Silva", "Flat 4B", "Kowalski-WiFi"],
    "station": ["Gare de Lyon", "King's Cross", "Berlin Hbf", "Zürich HB", "Tokyo Station", "Madrid Atocha",
                "Milano Centrale", "Praha hl.n.", "Amsterdam Centraal", "Wien Hbf"],
    "trail": ["Tour du Mont Blanc", "Laugavegur", "Inca Trail", "West Highland Way", "Camino Portugués",
              "Kungsleden", "Dragon's Back", "Pacific Crest Trail"],
    "resort": ["Zermatt", "Chamonix", "Whistler", "Niseko", "St. Anton", "Val d'Isère", "Aspen", "Åre"],
    "surf_spot": ["Nazaré", "Hossegor", "Bondi", "Uluwatu", "Ericeira", "Mundaka", "Jeffreys Bay"],
    "museum": ["Louvre", "Prado", "Rijksmuseum", "British Museum", "MoMA", "Uffizi", "Museo Frida Kahlo",
               "Ateneum"],
    "garment": ["linen shirt", "navy blazer", "black jeans", "wool coat", "summer dress", "white sneakers",
                "silk scarf"],
    "show": ["The Bear", "Dark", "Succession", "Money Heist", "Squid Game", "Fleabag", "Shōgun", "Borgen"],
    "cell": ["B12", "A1", "C7", "D30", "F2", "E15", "H4"],
    "cell_range": ["A1:B20", "C2:C50", "A1:F12", "B3:D9", "D2:D100"],
    "equation": ["2x + 3 = 11", "x^2 - 9 = 0", "5x - 7 = 3x + 1", "3(x - 2) = 12", "x/4 + 1 = 6"],
    "function": ["x^2", "sin(x)", "2x + 1", "e^x", "1/x", "x^3 - 3x"],
    "db_table": ["users", "orders", "invoices", "sessions", "page_views", "products", "audit_log"],
    "car_extra": ["child seat", "GPS", "snow chains", "extra driver", "roof box"],
    "comic": ["Saga", "Watchmen", "Asterix", "One Piece", "Sandman", "Persepolis", "Ms. Marvel"],
    "mailing_list": ["newsletter", "customers", "beta testers", "VIP", "event attendees"],
    "sky_object": ["Mars", "Jupiter", "Saturn", "Venus", "the Moon", "the Andromeda galaxy", "the Pleiades"],
    "person": [f"{a} {b}" for a, b in zip(FIRST, LAST * 2)],
}


def draw(kind, rng):
    m = re.fullmatch(r"int:(-?\d+)-(-?\d+)", kind)
    if m:
        return rng.randint(int(m[1]), int(m[2]))
    return rng.choice(POOLS[kind])


PARAM = re.compile(r"param (\w+):\s*(string|integer|number|boolean|enum\[[^\]]*\]|array<string>)(!?)"
                   r"(?:\s*\{([\w:-]+)\})?(?:\s*-\s*(.*))?$")


def load_bank(path=None):
    path = pathlib.Path(path or HERE / "toolbank.txt")
    families, fam, tool = [], None, None
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            if line.startswith("family "):
                fam = Family(line[7:].strip(), [])
                families.append(fam)
            elif line.startswith("tool "):
                name, _, desc = line[5:].partition(":")
                tool = Tool(fam.name, name.strip(), desc.strip())
                fam.tools.append(tool)
            elif line.startswith("param "):
                m = PARAM.fullmatch(line)
                if not m:
                    raise ValueError("bad param")
                t = m[2]
                enum = None
                if t.startswith("enum["):
                    enum, t = [e.strip() for e in t[5:-1].split(",")], "enum"
                elif t.startswith("array"):
                    t = "array"
                if t in ("string", "integer", "number", "array") and not m[4]:
                    raise ValueError("a kind is needed")
                tool.params.append(Param(m[1], t, m[3] == "!", m[4], enum, (m[5] or "").strip()))
            elif line.startswith("say:"):
                tool.says.append(line[4:].strip())
            elif line.startswith("result:"):
                tool.result = line[7:].strip()
            elif line.startswith("answer:"):
                tool.answers.append(line[7:].strip())
            elif line.startswith("error:"):
                tool.errors.append(line[6:].strip())
            else:
                raise ValueError("unknown line")
        except (ValueError, AttributeError) as e:
            raise ValueError(f"{path.name}:{n}: {e}: {raw!r}") from None
    for f in families:
        for t in f.tools:
            check(t)
    return families


def say_params(say):
    out = {}
    for m in SLOT.finditer(say):
        out[m[1]] = None if not m[2] else m[2] == "=true"
    return out


def render_say(say, shown):
    return re.sub(r"\s+", " ", SLOT.sub(lambda m: "" if m[2] else str(shown[m[1]]), say)).strip().replace(" ,", ",")


def fill_result(tool, args, rng):
    def sub(m):
        key = m[1]
        if key.startswith("$"):
            v = args.get(key[1:], "")
            return json.dumps(v, ensure_ascii=False)[1:-1] if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
        v = draw(key, rng)
        return json.dumps(v, ensure_ascii=False)[1:-1] if isinstance(v, str) else json.dumps(v)
    return json.loads(SLOT.sub(sub, tool.result))


def render_answer(answer, result, args):
    vals = {**args, **result}
    return SLOT.sub(lambda m: str(vals[m[1]]), answer)


def check(t):
    names = {p.name for p in t.params}
    where = f"tool {t.name}"
    if not t.says or not t.answers:
        raise ValueError(f"{where}: needs say and answer lines")
    for s in t.says:
        slots = say_params(s)
        for k in slots:
            if k not in names:
                raise ValueError(f"{where}: say slot {{{k}}} names no param")
        for p in t.params:
            if p.required and p.name not in slots:
                raise ValueError(f"{where}: say {s!r} lacks required {p.name}")
    for p in t.params:
        if p.kind and not p.kind.startswith("int:") and p.kind not in POOLS:
            raise ValueError(f"{where}: unknown kind {p.kind}")
    rng = random.Random(0)
    for _ in range(5):
        args = {p.name: draw(p.kind, rng) if p.kind else True for p in t.params}
        res = fill_result(t, args, rng)
        for a in t.answers:
            render_answer(a, {k: v for k, v in res.items()}, args)
    # every answer states the whole result: that is what the model learns to do
    fields = set(res)
    for a in t.answers:
        missing = fields - set(say_params(a))
        if missing:
            raise ValueError(f"{where}: answer {a!r} does not state {sorted(missing)}")


def main():
    fams = load_bank()
    tools = [t for f in fams for t in f.tools]
    types = {}
    for t in tools:
        for p in t.params:
            types[p.type] = types.get(p.type, 0) + 1
    print(f"{len(fams)} families, {len(tools)} tools, params by type: {types}")
    load_bank(HERE / "demo.txt") if "--demo" in sys.argv else None


if __name__ == "__main__":
    main()
