// "Which GPU does it fit?" at a glance: one row per GPU of the core's table (and a custom capacity
// when one is set), the figure the page compares by (allocated, reserved or device) against each
// capacity, the share used and whether it fits. Choosing a row makes it the page's GPU. The bytes
// are the core's, one estimate per GPU (a capacity can change the answer: paged optimizer states
// stay on the GPU only while they fit); this module lays them out.
import { formatBytes, formatSize } from './format.js';

export class GpuFitTable {
  /**
   * @param {HTMLElement} after the card this one follows
   * @param {(gpuId: string) => void} onPick
   */
  constructor(after, onPick) {
    this.card = document.createElement('section');
    this.card.className = 'card gpu-fit';
    this.card.id = 'gpu-fit-card';
    this.card.setAttribute('aria-labelledby', 'gpu-fit-title');
    const title = Object.assign(document.createElement('h3'), { id: 'gpu-fit-title', textContent: 'On every GPU' });
    this.table = document.createElement('table');
    this.table.className = 'breakdown gpu-fit-table';
    this.body = document.createElement('tbody');
    const head = document.createElement('thead');
    head.innerHTML = '<tr><th scope="col">GPU</th><th scope="col">Capacity</th><th scope="col">Needs</th><th scope="col">Used</th><th scope="col"><span class="sr-only">Fits</span></th></tr>';
    this.table.append(head, this.body);
    this.card.append(title, this.table);
    // dist/'s prerendered page already has this card (web/scripts/prerender.mjs): the live one
    // takes its place, never a second one beside it.
    const prerendered = document.getElementById(this.card.id);
    if (prerendered) prerendered.replaceWith(this.card);
    else after.after(this.card);
    this.onPick = onPick;
  }

  /** No rows and no card: a state that has no result has no figure on any GPU. */
  clear() {
    this.card.hidden = true;
    this.body.replaceChildren();
  }

  /**
   * @param {{id: string, name: string, capacity: number, bytes: number | null, verdict: object | null, chosen: boolean}[]} rows
   *   verdict: verdictOf the row's result (verdict.js)
   * @param {string} unit
   * @param {string} figureLabel e.g. "device"
   */
  render(rows, unit, figureLabel) {
    this.card.hidden = rows.length === 0;
    this.table.querySelector('thead th:nth-child(3)').textContent = `Needs (${figureLabel})`;
    this.body.replaceChildren(...rows.map((row) => {
      const tr = document.createElement('tr');
      if (row.chosen) tr.className = 'chosen';
      const { verdict } = row;
      const cells = [
        row.name, formatSize(row.capacity, unit), row.bytes === null ? '—' : formatBytes(row.bytes, unit),
        verdict ? `${(verdict.used * 100).toFixed(0)}%` : '—', verdict ? verdict.fit : '',
      ];
      cells.forEach((text, i) => {
        const cell = document.createElement(i === 0 ? 'th' : 'td');
        if (i === 0) {
          cell.scope = 'row';
          const button = Object.assign(document.createElement('button'), { type: 'button', className: 'link-button', textContent: text });
          button.setAttribute('aria-pressed', String(row.chosen));
          button.addEventListener('click', () => this.onPick(row.id));
          cell.append(button);
        } else cell.textContent = text;
        if (i === 4 && verdict) {
          cell.className = verdict.fit;
          cell.title = verdict.text;
        }
        tr.append(cell);
      });
      return tr;
    }));
  }
}
