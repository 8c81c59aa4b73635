// The form's layout is the field rows' (core FieldSpec::form, choice_labels): web/js/layout.js keeps
// only the sections' titles and order, and places every field where its row says.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { choiceLabel, fieldsInPageOrder, sectionFields } from '../../web/js/layout.js';
import { loadEngine } from './load.mjs';

const engine = await loadEngine();
const specs = engine.fieldSpecsByName;

test('every field the core places is in exactly one section\'s list, the one its row names, shown or under "More" as the row says', () => {
  const sections = sectionFields(specs);
  const seen = new Map();
  for (const { section, fields, more } of sections) {
    for (const [list, underMore] of [[fields, false], [more, true]]) {
      for (const name of list) {
        assert.ok(!seen.has(name), `${name} is in ${seen.get(name)} and in ${section.id}`);
        seen.set(name, section.id);
        assert.deepEqual({ section: specs.get(name).form.section, more: specs.get(name).form.more }, { section: section.id, more: underMore }, name);
      }
    }
  }
  // A field with no place is one the page sets itself (the GPU's capacity): nothing else is left out.
  const unplaced = engine.fieldSpecs.filter((s) => !seen.has(s.name));
  assert.deepEqual(unplaced.filter((s) => s.form), [], 'a placed field the form leaves out');
  assert.ok(unplaced.length < engine.fieldSpecs.length / 10, `${unplaced.length} fields have no place`);
  // Every section the rows name is one of the page's, and each holds a field of its own.
  assert.deepEqual(new Set(engine.fieldSpecs.filter((s) => s.form).map((s) => s.form.section)), new Set(sections.map((s) => s.section.id)));
  for (const { section, fields } of sections) assert.ok(fields.length > 0, `${section.id} shows no field`);
});

test('each list follows its rows\' order; the page order is the sections\' lists one after another', () => {
  for (const { section, fields, more } of sectionFields(specs)) {
    for (const list of [fields, more]) {
      const orders = list.map((name) => specs.get(name).form.order);
      assert.deepEqual(orders, [...orders].sort((a, b) => a - b), section.id);
    }
  }
  const all = new Set(engine.fieldSpecs.map((s) => s.name));
  assert.deepEqual(fieldsInPageOrder(specs, all), sectionFields(specs).flatMap((s) => [...s.fields, ...s.more]));
});

test('a section the rows name and the page lacks is named as the page\'s mistake, not a field left out', () => {
  const stray = new Map(specs);
  stray.set('new_field', { ...specs.get('seq_length'), name: 'new_field', form: { section: 'hardware', more: false, order: 10 } });
  assert.throws(() => sectionFields(stray), /new_field: the form has no section "hardware"/);
});

test('a choice reads as its row\'s label where the row has one, else as its name', () => {
  const peft = specs.get('peft');
  assert.deepEqual(peft.choices.map((c) => choiceLabel(peft, c)), peft.choice_labels);
  assert.equal(choiceLabel(peft, 'none'), 'full fine-tuning');
  const optimizer = specs.get('optimizer');
  assert.equal(optimizer.choice_labels, undefined);
  assert.equal(choiceLabel(optimizer, 'adamw'), 'adamw');
  assert.equal(choiceLabel(peft, 'no-such-choice'), 'no-such-choice');
});
