package protocheck

import "google.golang.org/protobuf/reflect/protoreflect"

// lookup finds fields and enum values by number and name through maps
// built once per message or enum: protocompile's descriptors answer
// ByNumber and ByName with a linear scan, which made comparing a message
// of n fields cost n^2 (a 100,000-field message took minutes).
type lookup struct {
	fields map[protoreflect.MessageDescriptor]*fieldMaps
	values map[protoreflect.EnumDescriptor]*valueMaps
}

type fieldMaps struct {
	byNumber map[protoreflect.FieldNumber]protoreflect.FieldDescriptor
	byName   map[protoreflect.Name]protoreflect.FieldDescriptor
}

type valueMaps struct {
	byNumber map[protoreflect.EnumNumber]protoreflect.EnumValueDescriptor // the first value of a number, as ByNumber
	byName   map[protoreflect.Name]protoreflect.EnumValueDescriptor
}

func (l *lookup) fieldsOf(md protoreflect.MessageDescriptor) *fieldMaps {
	if l.fields == nil {
		l.fields = map[protoreflect.MessageDescriptor]*fieldMaps{}
	}
	m := l.fields[md]
	if m == nil {
		fs := md.Fields()
		m = &fieldMaps{byNumber: make(map[protoreflect.FieldNumber]protoreflect.FieldDescriptor, fs.Len()),
			byName: make(map[protoreflect.Name]protoreflect.FieldDescriptor, fs.Len())}
		for i := range fs.Len() {
			f := fs.Get(i)
			if _, dup := m.byNumber[f.Number()]; !dup {
				m.byNumber[f.Number()] = f
			}
			m.byName[f.Name()] = f
		}
		l.fields[md] = m
	}
	return m
}

func (l *lookup) valuesOf(ed protoreflect.EnumDescriptor) *valueMaps {
	if l.values == nil {
		l.values = map[protoreflect.EnumDescriptor]*valueMaps{}
	}
	m := l.values[ed]
	if m == nil {
		vs := ed.Values()
		m = &valueMaps{byNumber: make(map[protoreflect.EnumNumber]protoreflect.EnumValueDescriptor, vs.Len()),
			byName: make(map[protoreflect.Name]protoreflect.EnumValueDescriptor, vs.Len())}
		for i := range vs.Len() {
			v := vs.Get(i)
			if _, dup := m.byNumber[v.Number()]; !dup {
				m.byNumber[v.Number()] = v
			}
			m.byName[v.Name()] = v
		}
		l.values[ed] = m
	}
	return m
}

// fieldByNumber is md.Fields().ByNumber(n), in constant time.
func (l *lookup) fieldByNumber(md protoreflect.MessageDescriptor, n protoreflect.FieldNumber) protoreflect.FieldDescriptor {
	if f, ok := l.fieldsOf(md).byNumber[n]; ok {
		return f
	}
	return nil
}

// fieldByName is md.Fields().ByName(name), in constant time.
func (l *lookup) fieldByName(md protoreflect.MessageDescriptor, name protoreflect.Name) protoreflect.FieldDescriptor {
	if f, ok := l.fieldsOf(md).byName[name]; ok {
		return f
	}
	return nil
}

// valueByNumber is ed.Values().ByNumber(n), in constant time.
func (l *lookup) valueByNumber(ed protoreflect.EnumDescriptor, n protoreflect.EnumNumber) protoreflect.EnumValueDescriptor {
	if v, ok := l.valuesOf(ed).byNumber[n]; ok {
		return v
	}
	return nil
}

// valueByName is ed.Values().ByName(name), in constant time.
func (l *lookup) valueByName(ed protoreflect.EnumDescriptor, name protoreflect.Name) protoreflect.EnumValueDescriptor {
	if v, ok := l.valuesOf(ed).byName[name]; ok {
		return v
	}
	return nil
}
