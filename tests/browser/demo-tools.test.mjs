// The demo's tools (www/tools.js) as plain functions: the calculator never uses eval, conversions are
// right, and bad input throws a message the model can read.
import assert from "node:assert/strict";
import { test } from "node:test";
import { demoTools, evaluate, notes } from "../../www/tools.js";

const tool = (name) => demoTools.find(([spec]) => spec.name === name)[1];

test("calculator", () => {
  assert.equal(evaluate("2 + 3 * 4"), 14);
  assert.equal(evaluate("(2 + 3) * 4"), 20);
  assert.equal(evaluate("2 ^ 10 / 4"), 256);
  assert.equal(evaluate("-3 + 1.5"), -1.5);
  assert.equal(evaluate("0.1 + 0.2"), 0.3);
  assert.throws(() => evaluate("alert(1)"), /cannot evaluate/);
  assert.throws(() => evaluate("1 / 0"), /not a finite number/);
  assert.throws(() => evaluate("(1 + 2"), /missing \)/);
});

test("unit conversion", () => {
  const convert = tool("convert_units");
  assert.equal(convert({ value: 10, from: "km", to: "mi" }).result, 6.21371);
  assert.equal(convert({ value: 100, from: "C", to: "F" }).result, 212);
  assert.equal(convert({ value: 2, from: "lb", to: "kg" }).result, 0.907185);
  // The names people write, as well as the symbols.
  assert.equal(convert({ value: 5, from: "miles", to: "kilometers" }).result, 8.04672);
  assert.equal(convert({ value: 3, from: "Metres", to: "feet" }).result, 9.84252);
  assert.equal(convert({ value: 1, from: "gallon", to: "litres" }).result, 3.78541);
  assert.throws(() => convert({ value: 1, from: "kg", to: "km" }), /cannot convert mass/);
  assert.throws(() => convert({ value: 1, from: "parsec", to: "km" }), /unknown unit parsec/);
});

test("weather, time and notes", () => {
  assert.deepEqual(tool("get_weather")({ city: "Paris" }), { city: "Paris", temperature_c: 18, condition: "sunny" });
  assert.throws(() => tool("get_weather")({ city: "Atlantis" }), /no weather data for Atlantis/);
  assert.match(tool("get_time")({ city: "tokyo" }).time, /^\d\d:\d\d$/);
  tool("add_note")({ text: "buy milk" });
  assert.deepEqual(tool("list_notes")({}), { notes: ["buy milk"] });
  assert.equal(notes.length, 1);
});
