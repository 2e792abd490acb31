// The demo's tools: ordinary JavaScript functions over local data, registered with agent.tool(). This is
// the part of the demo that pages copy.

const WEATHER = {
  paris: { temperature_c: 18, condition: "sunny" },
  london: { temperature_c: 12, condition: "rainy" },
  tokyo: { temperature_c: 22, condition: "cloudy" },
  "new york": { temperature_c: 15, condition: "windy" },
  berlin: { temperature_c: 10, condition: "overcast" },
  sydney: { temperature_c: 25, condition: "sunny" },
};

const TIME_ZONES = {
  paris: "Europe/Paris",
  london: "Europe/London",
  tokyo: "Asia/Tokyo",
  "new york": "America/New_York",
  berlin: "Europe/Berlin",
  sydney: "Australia/Sydney",
};

// Factors to a base unit per dimension; temperatures are converted separately.
// Each unit by its symbol and the names people write for it (plural, British spelling): the model copies
// the user's word.
const UNITS = Object.fromEntries(
  [
    ["length", 1, "m", "meter", "meters", "metre", "metres"],
    ["length", 1000, "km", "kilometer", "kilometers", "kilometre", "kilometres"],
    ["length", 0.01, "cm", "centimeter", "centimeters", "centimetre", "centimetres"],
    ["length", 0.001, "mm", "millimeter", "millimeters", "millimetre", "millimetres"],
    ["length", 1609.344, "mi", "mile", "miles"],
    ["length", 0.9144, "yd", "yard", "yards"],
    ["length", 0.3048, "ft", "foot", "feet"],
    ["length", 0.0254, "in", "inch", "inches"],
    ["mass", 1, "kg", "kilogram", "kilograms", "kilo", "kilos"],
    ["mass", 0.001, "g", "gram", "grams"],
    ["mass", 0.45359237, "lb", "lbs", "pound", "pounds"],
    ["mass", 0.028349523125, "oz", "ounce", "ounces"],
    ["volume", 1, "l", "liter", "liters", "litre", "litres"],
    ["volume", 0.001, "ml", "milliliter", "milliliters", "millilitre", "millilitres"],
    ["volume", 3.785411784, "gal", "gallon", "gallons"],
  ].flatMap(([dimension, factor, ...names]) => names.map((name) => [name, [dimension, factor]])),
);

function cityKey(city) {
  return String(city).trim().toLowerCase();
}

function toCelsius(v, unit) {
  if (unit === "c" || unit === "celsius") return v;
  if (unit === "f" || unit === "fahrenheit") return ((v - 32) * 5) / 9;
  if (unit === "k" || unit === "kelvin") return v - 273.15;
  return null;
}

function fromCelsius(c, unit) {
  if (unit === "c" || unit === "celsius") return c;
  if (unit === "f" || unit === "fahrenheit") return (c * 9) / 5 + 32;
  if (unit === "k" || unit === "kelvin") return c + 273.15;
  return null;
}

/** Evaluates + - * / ^ and parentheses over decimal numbers; never `eval`. */
export function evaluate(expression) {
  const src = String(expression);
  let i = 0;
  const skip = () => {
    while (src[i] === " ") i++;
  };
  const fail = (why) => {
    throw new Error(`cannot evaluate "${src}": ${why}`);
  };
  const number = () => {
    skip();
    const m = /^\d+(\.\d+)?|^\.\d+/.exec(src.slice(i));
    if (!m) fail(`expected a number at position ${i + 1}`);
    i += m[0].length;
    return Number(m[0]);
  };
  const atom = () => {
    skip();
    if (src[i] === "(") {
      i++;
      const v = sum();
      skip();
      if (src[i] !== ")") fail("missing )");
      i++;
      return v;
    }
    if (src[i] === "-") {
      i++;
      return -atom();
    }
    return number();
  };
  const power = () => {
    const base = atom();
    skip();
    if (src[i] === "^") {
      i++;
      return base ** power();
    }
    return base;
  };
  const product = () => {
    let v = power();
    for (;;) {
      skip();
      const op = src[i];
      if (op !== "*" && op !== "/" && op !== "x") return v;
      i++;
      const rhs = power();
      v = op === "/" ? v / rhs : v * rhs;
    }
  };
  const sum = () => {
    let v = product();
    for (;;) {
      skip();
      const op = src[i];
      if (op !== "+" && op !== "-") return v;
      i++;
      v = op === "+" ? v + product() : v - product();
    }
  };
  const v = sum();
  skip();
  if (i < src.length) fail(`unexpected "${src[i]}"`);
  if (!Number.isFinite(v)) fail("the result is not a finite number");
  return Number(v.toPrecision(12));
}

export const notes = [];

export const demoTools = [
  [
    {
      name: "get_weather",
      description: "Get the current weather for a city.",
      parameters: { type: "object", properties: { city: { type: "string", description: "City name" } }, required: ["city"] },
    },
    ({ city }) => {
      const w = WEATHER[cityKey(city)];
      if (!w) throw new Error(`no weather data for ${city}; known cities: Paris, London, Tokyo, New York, Berlin, Sydney`);
      return { city, ...w };
    },
  ],
  [
    {
      name: "get_time",
      description: "Get the current local time in a city.",
      parameters: { type: "object", properties: { city: { type: "string", description: "City name" } }, required: ["city"] },
    },
    ({ city }) => {
      const timeZone = TIME_ZONES[cityKey(city)];
      if (!timeZone) throw new Error(`unknown city ${city}`);
      const time = new Intl.DateTimeFormat("en-GB", { timeZone, hour: "2-digit", minute: "2-digit" }).format(new Date());
      return { city, time };
    },
  ],
  [
    {
      name: "calculate",
      description: "Evaluate a math expression.",
      parameters: { type: "object", properties: { expression: { type: "string", description: "The expression to evaluate" } }, required: ["expression"] },
    },
    ({ expression }) => ({ expression, result: evaluate(expression) }),
  ],
  [
    {
      name: "convert_units",
      description: "Convert a value from one unit to another.",
      parameters: {
        type: "object",
        properties: {
          value: { type: "number", description: "The value to convert" },
          from: { type: "string", description: "Unit to convert from" },
          to: { type: "string", description: "Unit to convert to" },
        },
        required: ["value", "from", "to"],
      },
    },
    ({ value, from, to }) => {
      const f = String(from).toLowerCase();
      const t = String(to).toLowerCase();
      const c = toCelsius(value, f);
      if (c !== null) {
        const out = fromCelsius(c, t);
        if (out === null) throw new Error(`cannot convert a temperature to ${to}`);
        return { value, from, to, result: Number(out.toFixed(2)) };
      }
      const [df, kf] = UNITS[f] ?? [];
      const [dt, kt] = UNITS[t] ?? [];
      if (!df || !dt) throw new Error(`unknown unit ${!df ? from : to}`);
      if (df !== dt) throw new Error(`cannot convert ${df} (${from}) to ${dt} (${to})`);
      return { value, from, to, result: Number(((value * kf) / kt).toPrecision(6)) };
    },
  ],
  [
    {
      name: "add_note",
      description: "Save a note.",
      parameters: { type: "object", properties: { text: { type: "string", description: "The note text" } }, required: ["text"] },
    },
    ({ text }) => {
      notes.push(text);
      return { saved: text, count: notes.length };
    },
  ],
  [
    { name: "list_notes", description: "List all saved notes.", parameters: { type: "object", properties: {}, required: [] } },
    () => ({ notes: [...notes] }),
  ],
];
